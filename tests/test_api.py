"""The Python API (`cuer_agent.api`, docs/api.md): one typed function per study, the
same bytes as the CLI, runs read back as typed objects."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import invoke

import cuer_agent
from cuer_agent.config import AgentSection, DataSection, StudyConfig, with_values
from cuer_agent.errors import ConfigError, CuerError
from cuer_agent.studies._common.summary_model import RunSummary

ROOT = Path(__file__).resolve().parents[1]
API_PAGE = ROOT / "docs" / "api.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
OFFLINE = cuer_agent.Execution(use_cache=False)


def test_every_code_block_of_the_api_page_runs_in_order_from_an_empty_directory(
        tmp_path: Path) -> None:
    blocks = PYTHON_BLOCK.findall(API_PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 3
    script = tmp_path / "api_page.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"agent accuracy on clean runs: \d\.\d\d \(n=5\)", done.stdout)
    assert re.search(r"\d+ of \d+ traces diagnosed by .*consistency", done.stdout)


def test_the_api_and_the_cli_write_the_same_bytes(tmp_path: Path) -> None:
    config = StudyConfig(data=DataSection(n=3), agent=AgentSection(hops=2))
    cuer_agent.run(config, out=tmp_path / "api", execution=OFFLINE)
    cli = invoke(["run", "--hops", "2", "--n", "3", "--out", str(tmp_path / "cli"),
                  "--no-cache", "--no-progress"])
    assert cli.exit_code == 0, cli.stderr
    for name in ("config.json", "traces.jsonl", "summary.json"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def test_load_run_reads_a_run_back_as_its_models(tmp_path: Path) -> None:
    config = StudyConfig(data=DataSection(n=2), agent=AgentSection(hops=1))
    summary = cuer_agent.run(config, out=tmp_path / "run", execution=OFFLINE)
    loaded = cuer_agent.load_run(tmp_path / "run")
    assert loaded.command == "run" and isinstance(loaded.summary, RunSummary)
    assert loaded.summary == summary
    traces = loaded.traces()
    assert len(traces) == 2 and all(t.question and t.hops for t in traces)


def test_a_run_directory_given_as_a_string_is_written_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = StudyConfig(data=DataSection(n=1), agent=AgentSection(hops=1))
    cuer_agent.run(config, out="runs/text", execution=OFFLINE)
    assert {"config.json", "traces.jsonl", "summary.json", "ledger.json"} <= {
        p.name for p in (tmp_path / "runs" / "text").iterdir()}


def test_an_unknown_mode_is_one_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mode must be agentic or single_shot"):
        cuer_agent.run(StudyConfig(), mode="bogus", out=tmp_path,  # type: ignore[arg-type]
                       execution=OFFLINE)


def test_load_run_of_a_folder_that_is_no_run_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CuerError, match=r"config\.json: no such file"):
        cuer_agent.load_run(tmp_path)


def test_a_value_a_section_refuses_is_one_config_error_naming_its_config_key() -> None:
    with pytest.raises(ConfigError, match=r"^\[data\] n: .*greater than or equal to 1"):
        with_values(StudyConfig(), {"data": {"n": 0}})


def test_a_value_a_section_refuses_through_the_cli_names_its_flag() -> None:
    with pytest.raises(ConfigError, match=r"^--n: .*greater than or equal to 1"):
        with_values(StudyConfig(), {"data": {"n": 0}}, flag_names={})
    with pytest.raises(ConfigError, match=r"^--retries: "):
        with_values(StudyConfig(), {"agent": {"retries_per_hop": -1}},
                    flag_names={"retries_per_hop": "--retries"})


def test_a_study_refuses_mode_single_shot_with_a_users_agent(tmp_path: Path) -> None:
    config = StudyConfig(agent=AgentSection(factory="examples/react_agent.py:build"))
    with pytest.raises(ConfigError, match="does not combine with mode single_shot"):
        cuer_agent.run(config, mode="single_shot", out=tmp_path / "run", execution=OFFLINE)


def test_dir_of_the_package_lists_the_lazily_loaded_api() -> None:
    import cuer_agent

    assert set(cuer_agent.__all__) <= set(dir(cuer_agent))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("api") / "run"
    cuer_agent.run(StudyConfig(data=DataSection(n=3), agent=AgentSection(hops=2)), out=out,
                   execution=OFFLINE)
    return out


def test_diagnose_takes_a_run_directory_or_a_loaded_run_with_its_hop_budget(
        small_run: Path, tmp_path: Path) -> None:
    by_path = cuer_agent.diagnose(small_run, out=tmp_path / "a", execution=OFFLINE)
    by_run = cuer_agent.diagnose(cuer_agent.load_run(small_run), out=tmp_path / "b",
                                 execution=OFFLINE)
    assert by_path == by_run and by_path.hop_budget == 2 and by_path.mapped == 3


def test_diagnose_returns_its_summary_as_a_model_that_serialises(
        small_run: Path, tmp_path: Path) -> None:
    import json

    diagnosed = cuer_agent.diagnose(small_run, out=tmp_path / "d", execution=OFFLINE)
    assert json.loads(diagnosed.model_dump_json(exclude_unset=True)) == json.loads(
        (tmp_path / "d" / "summary.json").read_text())


@pytest.mark.parametrize("wrong", [["a", "trace"], 3])
def test_diagnose_given_what_it_cannot_read_is_one_config_error(
        wrong: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="diagnose takes a TraceSource") as caught:
        cuer_agent.diagnose(wrong, out=tmp_path)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_diagnose_given_a_folder_that_is_no_run_says_what_it_takes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a run directory"):
        cuer_agent.diagnose(tmp_path, out=tmp_path / "out")


def test_load_run_reads_a_diagnose_folder_back_as_its_summary(
        small_run: Path, tmp_path: Path) -> None:
    diagnosed = cuer_agent.diagnose(small_run, out=tmp_path / "d", execution=OFFLINE)
    loaded = cuer_agent.load_run(tmp_path / "d")
    assert loaded.command == "diagnose" and loaded.summary == diagnosed
    assert loaded.config.hop_budget == 2 and len(loaded.traces()) == 3


def test_gzipped_spans_are_diagnosed_as_the_plain_file_is(small_run: Path,
                                                          tmp_path: Path) -> None:
    import gzip

    from cuer_agent.interchange import export_run

    plain = tmp_path / "spans.jsonl"
    export_run(small_run, plain)
    packed = tmp_path / "spans.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    scores = [cuer_agent.diagnose(cuer_agent.TraceSource(path=p, hop_budget=2),
                                  out=tmp_path / p.name.replace(".", "-"),
                                  execution=OFFLINE).diagnosers for p in (plain, packed)]
    assert scores[0] == scores[1]

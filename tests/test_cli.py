"""End-to-end through the `cuer-agent` command line, with the offline extractive backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Background, cli

from cuer_agent.data import shared_sample_path


def outputs(result: dict) -> list[str]:
    """The stdout of each process of a background scenario, each having exited 0."""
    for proc in result["processes"]:
        assert proc["returncode"] == 0, proc["stderr"]
    return [proc["stdout"] for proc in result["processes"]]


def test_data_stats_synthetic_reports_counts_and_recall() -> None:
    code, out, _ = cli("data", "stats", "--dataset", "synthetic", "--gold-hops", "3", "--n", "30",
                       "--seed", "7", "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["examples"] == 30
    assert stats["hops"] == {"3": 30}
    assert stats["passages"] > 0
    assert set(stats["support_recall_at_5"]) == {"1", "2", "3"}


@pytest.mark.background("data_stats")
def test_data_stats_is_identical_across_processes(background: Background) -> None:
    """`data stats --gold-hops 3 --n 40 --seed 7 --json` in two processes (scenarios.data_stats,
    run in the background lane)."""
    outs = outputs(background.result("data_stats")[1])
    assert outs[0] == outs[1] and outs[0]


@pytest.mark.shared_data
def test_data_stats_musique_hop_histogram() -> None:
    path = shared_sample_path("musique")
    if path is None:
        pytest.skip("../shared/data not present: MuSiQue sample missing")
    code, out, _ = cli("data", "stats", "--dataset", "musique", "--path", str(path), "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["examples"] == 100
    assert stats["hops"] == {"2": 73, "3": 16, "4": 11}


@pytest.mark.parametrize("args, needle", [
    (["--dataset", "nope"], "unknown dataset"),
    (["--dataset", "musique", "--path", "/no/such/file.jsonl"], "/no/such/file.jsonl"),
    (["--dataset", "musique"], "--path is required"),
])
def test_data_stats_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    code, out, err = cli("data", "stats", *args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_data_stats_malformed_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"\n')
    code, _, err = cli("data", "stats", "--dataset", "musique", "--path", str(bad))
    assert code == 2
    assert "bad.jsonl" in err and "line 1" in err


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", "--dataset", "synthetic", "--hops", "3", "--n", "12", "--seed", "7",
            "--out", str(out), "--cache", str(out.parent / "cache.sqlite"), "--no-progress",
            *extra]


def test_run_writes_traces_and_summary(tmp_path: Path) -> None:
    code, _, err = cli(*run_args(tmp_path / "run"))
    assert code == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n"] == 12
    assert set(summary["accuracy"]) == {"soft", "em", "f1"}
    assert {"calls", "cache_hits", "parse_failures", "tokens"} <= set(summary["ledger"])
    assert sum(summary["hops_used"].values()) == 12
    assert len((tmp_path / "run" / "traces.jsonl").read_text().splitlines()) == 12


def test_same_command_twice_gives_identical_traces(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert cli(*run_args(tmp_path / name, "--no-cache"))[0] == 0
    first = (tmp_path / "a" / "traces.jsonl").read_bytes()
    assert first == (tmp_path / "b" / "traces.jsonl").read_bytes()


def test_rerun_in_a_new_directory_is_served_by_the_cache(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path / "a"))[0] == 0
    assert cli(*run_args(tmp_path / "b"))[0] == 0
    ledger = json.loads((tmp_path / "b" / "ledger.json").read_text())
    assert ledger["calls"] == 0 and ledger["cache_hits"] > 0


def test_rerun_of_a_finished_run_does_no_work(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path / "run"))[0] == 0
    before = (tmp_path / "run" / "summary.json").read_bytes()
    assert cli(*run_args(tmp_path / "run"))[0] == 0
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert ledger["calls"] == 0 and ledger["cache_hits"] == 0
    assert (tmp_path / "run" / "summary.json").read_bytes() == before


def test_interrupted_run_resumes_to_the_same_summary(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path / "full", "--no-cache"))[0] == 0
    partial = shutil.copytree(tmp_path / "full", tmp_path / "partial")  # then cut back
    lines = (partial / "traces.jsonl").read_text().splitlines(keepends=True)
    # Keep 5 rows and half of the 6th: a process killed mid-write.
    (partial / "traces.jsonl").write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    (partial / "summary.json").unlink()
    code, _, err = cli(*run_args(partial, "--no-cache"))
    assert code == 0
    assert "torn last line" in err
    full = tmp_path / "full"
    assert (partial / "summary.json").read_bytes() == (full / "summary.json").read_bytes()
    assert (partial / "traces.jsonl").read_bytes() == (full / "traces.jsonl").read_bytes()


@pytest.mark.parametrize("args, needle", [
    (["--backend", "nope"], "unknown backend"),
    (["--backend", "ollama"], "needs --model"),
    (["--hops", "0"], "--hops must be >= 1"),
    (["--mode", "sideways"], "--mode must be"),
])
def test_run_bad_options_fail_before_work_with_exit_2(tmp_path: Path, args: list[str],
                                                      needle: str) -> None:
    code, _, err = cli("run", "--dataset", "synthetic", "--n", "3", "--out",
                       str(tmp_path / "run"), *args)
    assert code == 2
    assert needle in err
    assert not (tmp_path / "run").exists()


def test_unreachable_server_fails_before_work(tmp_path: Path) -> None:
    code, _, err = cli("run", "--dataset", "synthetic", "--n", "3", "--out", str(tmp_path / "r"),
                       "--backend", "ollama", "--model", "qwen3:8b",
                       "--base-url", "http://127.0.0.1:9")
    assert code == 2
    assert "cannot reach" in err
    assert not (tmp_path / "r").exists()


def test_openai_without_key_fails_before_work(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = cli("run", "--dataset", "synthetic", "--n", "3", "--out", str(tmp_path / "r"),
                       "--backend", "openai", "--model", "gpt-x")
    assert code == 2
    assert "OPENAI_API_KEY" in err


def test_trace_show_renders_one_trace(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path / "run"))[0] == 0
    first = json.loads((tmp_path / "run" / "traces.jsonl").read_text().splitlines()[0])
    code, out, _ = cli("trace", "show", str(tmp_path / "run"), "--example",
                       first["trace"]["example_id"])
    assert code == 0
    assert "hop 1" in out and "answer:" in out


def test_module_entry_point_runs(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "120"}
    proc = subprocess.run([sys.executable, "-m", "cuer_agent.cli", "--help"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "data" in proc.stdout and "run" in proc.stdout


def test_server_failing_mid_run_marks_one_example_failed_and_goes_on(
        tmp_path: Path, openai_server) -> None:
    from fake_servers import Behaviour

    # The model check and two skill calls succeed, then one request fails on every attempt.
    openai_server.script(*[Behaviour()] * 3, *[Behaviour(status=500, retry_after="0")] * 4)
    code, _, err = cli("run", "--dataset", "synthetic", "--n", "3", "--hops", "2",
                       "--out", str(tmp_path / "run"), "--backend", "openai",
                       "--model", "test-model", "--base-url", openai_server.url, "--no-cache",
                       "--no-progress", "--concurrency", "1")  # the script is a sequence
    assert code == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n"] == 3
    assert summary["status"].get("error") == 1
    assert "HTTP 500" in summary["errors"][0]["error"]


def test_score_prints_official_em_f1_soft(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([
        {"_id": "a", "question": "q?", "answer": "New York", "type": "bridge",
         "supporting_facts": [], "context": []},
        {"_id": "b", "question": "q?", "answer": "yes", "type": "comparison",
         "supporting_facts": [], "context": []}]))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"answer": {"a": "New York City", "b": "no"}}))
    code, out, _ = cli("score", "--dataset", "hotpotqa", "--gold", str(gold), "--pred",
                       str(pred), "--json")
    assert code == 0
    assert json.loads(out) == {"em": 0.0, "f1": 0.4, "soft": 0.5, "n": 2, "missing": 0}


def test_score_bad_prediction_file_is_exit_2(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"_id": "a", "question": "q?", "answer": "x", "type": "bridge",
                                 "supporting_facts": [], "context": []}]))
    pred = tmp_path / "pred.json"
    pred.write_text("{not json")
    code, _, err = cli("score", "--dataset", "hotpotqa", "--gold", str(gold), "--pred", str(pred))
    assert code == 2 and "pred.json" in err


@pytest.mark.background("hash_seeds")
def test_run_is_identical_across_processes_with_different_hash_seeds(
        background: Background) -> None:
    """Set iteration order must never reach a result (PYTHONHASHSEED differs per process):
    `run --hops 3 --n 25 --seed 7` under hash seeds 1 and 2 (scenarios.hash_seeds, run in
    the background lane)."""
    out, result = background.result("hash_seeds")
    outputs(result)
    outs = [(out / f"r{i}" / "traces.jsonl").read_bytes() for i in range(2)]
    assert outs[0] == outs[1]


def test_run_reads_a_config_file_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[data]\nn = 4\nseed = 7\n\n[agent]\nhops = 2\nk = 3\nretries_per_hop = 0\n')

    def recorded(name: str, *flags: str) -> dict:
        code, _, err = cli("run", *flags, "--out", str(tmp_path / name), "--no-cache",
                           "--no-progress")
        assert code == 0, err
        return json.loads((tmp_path / name / "config.json").read_text())

    used = recorded("file", "--config", str(config))
    assert (used["n"], used["seed"], used["hop_budget"], used["k"],
            used["retries_per_hop"]) == (4, 7, 2, 3, 0)
    assert "hops" not in used  # the synthetic questions have the budget's hop count
    summary = json.loads((tmp_path / "file" / "summary.json").read_text())
    assert set(summary["accuracy_by_gold_hops"]) == {"2"}

    flags = ("--n", "3", "--seed", "0", "--hops", "3", "--k", "5", "--retries", "1")
    over = recorded("flags", "--config", str(config), *flags)
    assert (over["n"], over["seed"], over["hop_budget"], over["k"],
            over["retries_per_hop"]) == (3, 0, 3, 5, 1)
    # every value overridden: the run records what the flags alone record
    alone = recorded("alone", *flags)
    assert over == alone


def test_run_config_without_the_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, _, err = cli("run", "--config", str(tmp_path / "none.toml"), "--out",
                       str(tmp_path / "r"))
    assert code == 2 and "no such config file" in err
    assert not (tmp_path / "r").exists()


def test_a_backend_flag_other_than_the_files_drops_the_files_model_and_server(
        tmp_path: Path) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[backend]\nname = "ollama"\nmodel = "qwen3:8b"\n'
                      'base_url = "http://127.0.0.1:9"\n')
    code, _, err = cli("run", "--config", str(config), "--backend", "extractive", "--n", "1",
                       "--out", str(tmp_path / "r"), "--no-cache", "--no-progress")
    assert code == 0, err
    backend = json.loads((tmp_path / "r" / "config.json").read_text())["backend"]
    assert (backend["name"], backend["model"], backend["base_url"]) == ("extractive",
                                                                        "rules-v1", None)


@pytest.mark.parametrize("ref, label", [
    (None, "cuer-agent"),
    ("examples/react_agent.py:build", "react_agent.build"),
    ("mypkg.agents:make", "mypkg.agents.make"),
    ("my dir/über agent.py:build", "ber-agent.build"),
])
def test_an_agent_reference_becomes_a_directory_safe_label(ref: str | None, label: str
                                                           ) -> None:
    from cuer_agent.agents import agent_label

    assert agent_label(ref) == label


def test_evaluates_default_out_names_the_agent_so_the_built_in_runs_after_yours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from cuer_agent import report
    from cuer_agent.studies.evaluate import report as evaluate_report
    from cuer_agent.studies.evaluate import runner as evaluate

    # the run directory is opened (and a different config refused) before the studies
    monkeypatch.setattr(evaluate, "run_evaluate", lambda *args, **kwargs: {})
    monkeypatch.setattr(evaluate_report, "print_headline", lambda *args, **kwargs: Console())
    monkeypatch.setattr(report, "write_report",
                        lambda run_dir: (run_dir / "report.md", run_dir / "report.html"))
    monkeypatch.chdir(tmp_path)
    own = str(Path(__file__).resolve().parents[1] / "examples" / "two_node_agent.py:build")
    for agent in (["--agent", own], []):
        code, _, err = cli("evaluate", "--n", "2", "--hops", "2", "--no-cache",
                           "--no-progress", *agent)
        assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "evaluate-cuer-agent-synthetic-h2", "evaluate-two_node_agent.build-synthetic-h2"]


def test_run_files_without_a_config_json_are_refused_not_resumed(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert cli("run", "--n", "2", "--out", str(out), "--no-cache", "--no-progress")[0] == 0
    (out / "config.json").unlink()
    traces = (out / "traces.jsonl").read_bytes()
    code, _, err = cli("run", "--n", "2", "--k", "3", "--out", str(out), "--no-cache",
                       "--no-progress")
    assert code == 2 and "no config.json" in err and "traces.jsonl" in err
    assert (out / "traces.jsonl").read_bytes() == traces and not (out / "config.json").exists()

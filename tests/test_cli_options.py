"""The options the commands share: one declaration, one meaning, one override style.

`--hops` is the agent's hop budget and exists only where an agent runs (or, in
`diagnose`, where its traces are read: the budget it ran with); `--gold-hops`
keeps the questions with those gold hop counts wherever data is read. A shared option
has the same declaration in every command, fails the same way (one line naming it,
exit 2), and a flag left out leaves the --config file's value standing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import invoke
from test_loaders import musique_record

from cuer_agent.cli import app
from cuer_agent.cli._options import DataFlags
from cuer_agent.config import StudyConfig, validate_config, with_question_hops, with_values
from cuer_agent.errors import ConfigError
from cuer_agent.studies._common.session import run_path

STUDIES = ("run", "cuer", "propagate", "evaluate")
"""The commands that read a --config file and write a run directory."""
DATA_COMMANDS = (*STUDIES, "data stats")
AGENT_COMMANDS = ("run", "propagate", "evaluate")
SHARED = {
    "--dataset": DATA_COMMANDS, "--path": DATA_COMMANDS, "--n": DATA_COMMANDS,
    "--gold-hops": DATA_COMMANDS, "--seed": (*DATA_COMMANDS, "diagnose"),
    "--hops": AGENT_COMMANDS, "--retries": AGENT_COMMANDS, "--agent": AGENT_COMMANDS,
    "--config": STUDIES, "--out": STUDIES, "--backend": (*STUDIES, "diagnose"),
    "--model": (*STUDIES, "diagnose"), "--executor": STUDIES, "--concurrency": STUDIES,
}
"""Each shared option and the commands that take it."""


def _command(name: str) -> Any:
    command: Any = typer.main.get_command(app)
    for word in name.split():
        command = command.commands[word]
    return command


def _option(command: str, flag: str) -> Any:
    return next((p for p in _command(command).params if flag in p.opts), None)


def _all_commands() -> list[str]:
    group: Any = typer.main.get_command(app)
    names = []
    for name, command in group.commands.items():
        subcommands = getattr(command, "commands", None)
        names += [f"{name} {sub}" for sub in subcommands] if subcommands else [name]
    return names


@pytest.mark.parametrize("flag", sorted(SHARED))
def test_a_shared_option_is_declared_the_same_in_every_command_that_takes_it(
        flag: str) -> None:
    declared = {command: _option(command, flag) for command in SHARED[flag]}
    assert all(declared.values()), f"{flag} missing from {declared}"
    kinds = {(p.name, p.help, p.default, p.required, p.is_flag, p.nargs, p.multiple)
             for p in declared.values() if p is not None}
    assert len(kinds) == 1, kinds


def test_hops_exists_only_where_an_agent_runs_or_its_traces_are_diagnosed() -> None:
    with_hops = {name for name in _all_commands() if _option(name, "--hops")}
    assert with_hops == {*AGENT_COMMANDS, "diagnose"}


def test_every_config_flag_defaults_to_none_so_the_file_stands_unless_given() -> None:
    for command in STUDIES:
        for flag in ("--dataset", "--n", "--gold-hops", "--seed", "--backend"):
            assert _option(command, flag).default is None
    for command in AGENT_COMMANDS:
        assert _option(command, "--hops").default is None


@pytest.mark.parametrize("args, needle, commands", [
    (["--n", "0"], "--n must be >= 1, got 0", DATA_COMMANDS),
    (["--gold-hops", "two"], "--gold-hops must list hop counts >= 1", DATA_COMMANDS),
    (["--gold-hops", "0"], "--gold-hops must list hop counts >= 1", DATA_COMMANDS),
    (["--hops", "0"], "--hops must be >= 1, got 0", AGENT_COMMANDS),
    (["--retries", "-1"], "--retries must be >= 0, got -1", AGENT_COMMANDS),
    (["--retries", "9"], "--retries: Input should be less than or equal to 5",
     AGENT_COMMANDS),
    (["--gold-hops", "5"], "1 to 4 hops, got 5 from --gold-hops", DATA_COMMANDS),
    (["--hops", "6"], "1 to 4 hops, got 6 from --hops", AGENT_COMMANDS),
])
def test_a_bad_shared_option_is_one_line_naming_it_and_exit_2_in_every_command(
        tmp_path: Path, args: list[str], needle: str, commands: tuple[str, ...]) -> None:
    for command in commands:
        out = [] if command == "data stats" else ["--out", str(tmp_path / "run")]
        result = invoke([*command.split(), *out, *args])
        assert result.exit_code == 2, (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (command, result.stderr)
        assert needle in result.stderr, (command, result.stderr)
        assert not (tmp_path / "run").exists()


def test_hops_is_no_option_of_the_commands_that_run_no_agent() -> None:
    for command in ("cuer", "data stats"):
        result = invoke([*command.split(), "--hops", "3"])
        assert result.exit_code == 2
        assert "No such option: --hops" in result.output + result.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (["evaluate", "--n", "abc"], "cuer-agent evaluate: Invalid value for '--n'"),
    (["evaluate", "--bogus"], "cuer-agent evaluate: No such option: --bogus"),
    (["evalu"], "No such command 'evalu'. Did you mean 'evaluate'?"),
    (["data", "bogus"], "cuer-agent data: No such command 'bogus'"),
])
def test_a_usage_error_typer_finds_is_one_line_naming_the_command_and_exit_2(
        args: list[str], needle: str) -> None:
    result = invoke(args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_group_called_without_a_command_still_prints_its_help() -> None:
    result = invoke(["data"])
    assert result.exit_code == 2
    assert "Inspect data sets." in result.output + result.stderr
    assert "error:" not in result.stderr


@pytest.mark.parametrize("command", STUDIES)
def test_a_flag_left_out_takes_the_config_files_value_and_a_flag_given_overrides_it(
        tmp_path: Path, command: str) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[data]\ndataset = "musique"\npath = "/no/such/from-config.jsonl"\n')
    base = [command, "--config", str(config), "--out", str(tmp_path / "run")]
    from_file = invoke(base)
    from_flag = invoke([*base, "--path", "/no/such/from-flag.jsonl"])
    assert from_file.exit_code == from_flag.exit_code == 2
    assert "from-config.jsonl" in from_file.stderr
    assert "from-flag.jsonl" in from_flag.stderr and "from-config" not in from_flag.stderr


def _question_hops(study: StudyConfig, flags: DataFlags, budget: int | None) -> int | None:
    """[data] hops as a command resolves it: the flags set, then the budget's turn."""
    return with_question_hops(with_values(study, flags.values(study)), budget).data.hops


def test_gold_hops_on_the_command_line_overrides_the_files_synthetic_hops() -> None:
    study = validate_config({"data": {"hops": 3}})
    assert _question_hops(study, DataFlags(), 4) == 3
    assert _question_hops(study, DataFlags(gold_hops="2"), 4) == 2
    assert _question_hops(study, DataFlags(gold_hops="2,3"), 4) is None


def test_without_gold_hops_the_synthetic_questions_follow_the_hop_budget() -> None:
    study = validate_config({})
    assert _question_hops(study, DataFlags(), 4) == 4
    assert _question_hops(study, DataFlags(), None) is None  # no agent: the world's mix
    assert _question_hops(study, DataFlags(dataset="musique"), 4) is None


def test_a_budget_beyond_the_worlds_questions_is_one_error_naming_the_way_out() -> None:
    with pytest.raises(ConfigError, match=r"1 to 4 hops, got 6 from --hops .*--gold-hops"):
        with_question_hops(validate_config({}), 6)


def test_gold_hops_filters_the_questions_while_hops_sets_the_agents_budget(
        tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(["run", "--hops", "4", "--gold-hops", "2", "--n", "3", "--out", str(out),
                     "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["hop_budget"] == 4 and config["gold_hops"] == "2"
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["accuracy_by_gold_hops"]) == {"2"}


def test_gold_hops_filters_real_data_by_its_gold_hop_count(tmp_path: Path) -> None:
    two_hop = musique_record(id="2hop1__1_2", question_decomposition=(
        musique_record()["question_decomposition"][:2]))
    path = tmp_path / "musique.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (musique_record(), two_hop)))
    result = invoke(["data", "stats", "--dataset", "musique", "--path", str(path),
                     "--gold-hops", "2", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["hops"] == {"2": 1}


def test_a_study_without_out_writes_under_runs_named_by_agent_data_and_budget() -> None:
    assert run_path("propagate", "musique", agent=None, hops=4) == Path(
        "runs/propagate-cuer-agent-musique-h4")
    assert run_path("run", "synthetic", agent="examples/react_agent.py:build",
                    hops=3) == Path("runs/run-react_agent.build-synthetic-h3")
    assert run_path("cuer", "2wiki") == Path("runs/cuer-2wiki")


def test_run_without_out_writes_its_default_run_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["run", "--hops", "1", "--n", "1", "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "runs/run-cuer-agent-synthetic-h1/summary.json").exists()

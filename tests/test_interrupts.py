"""Interrupts: Ctrl-C or SIGTERM stops a study at once with one line — what was saved and
the exact command that resumes it — exit code 130; the resumed run is byte-identical to
one never interrupted."""

from __future__ import annotations

import filecmp
import gc
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import pytest
import typer
from conftest import invoke

from cuer_agent.cli._app import INTERRUPTED, user_errors
from cuer_agent.studies._common.session import RUNNING

CLI = [sys.executable, "-m", "cuer_agent.cli"]
STUDY = ["evaluate", "--hops", "2", "--n", "6"]


def interrupting_app(tmp_path: Path) -> typer.Typer:
    """A command that saves two rows in a run directory, then is interrupted."""
    app = typer.Typer()

    @app.command()
    @user_errors
    def study(ctx: typer.Context, out: Annotated[Path, typer.Option()], n: int = 3) -> None:
        (out / "agentic").mkdir(parents=True)
        (out / "agentic" / "traces.jsonl").write_text('{"a": 1}\n{"a": 2}\n{"cut')
        RUNNING["run_dir"] = out
        raise KeyboardInterrupt

    @app.command()
    @user_errors
    def early() -> None:
        raise KeyboardInterrupt

    return app


def test_an_interrupt_says_what_was_saved_and_the_command_that_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(["study", "--out", out, "--n", "5"], app=interrupting_app(tmp_path),
                    interrupt_stops_the_run=False)

    assert result.exit_code == INTERRUPTED
    [line] = [x for x in result.output.splitlines() if x.strip()]
    assert line == (f"interrupted: finished rows are saved in {out} (agentic/traces.jsonl 2); "
                    f"resume with: cuer-agent study --out {out} --n 5")


def test_an_interrupt_before_any_run_says_nothing_was_saved(tmp_path: Path) -> None:
    result = invoke(["early"], app=interrupting_app(tmp_path), interrupt_stops_the_run=False)

    assert result.exit_code == INTERRUPTED
    assert result.output.strip() == "interrupted: nothing was saved (no run had started)"


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "CUER_CACHE": str(cwd / "cache.sqlite")}
    # A background job inherits SIGINT ignored; a terminal's Ctrl-C is not ignored.
    return subprocess.Popen([*CLI, *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_rows(path: Path, process: subprocess.Popen[str], limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.stat().st_size:
            return
        time.sleep(0.05)
    pytest.fail(f"no row reached {path} within {limit:.0f} s")


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_study_stops_within_5_s_and_its_resume_is_byte_identical(
        tmp_path: Path, sig: signal.Signals) -> None:
    process = _start([*STUDY, "--out", "interrupted"], tmp_path)
    _wait_for_rows(tmp_path / "interrupted" / "agentic" / "traces.jsonl", process)
    sent = time.monotonic()
    process.send_signal(sig)
    _, err = process.communicate(timeout=30)
    waited = time.monotonic() - sent

    assert process.returncode == INTERRUPTED and waited <= 5.0, (waited, err)
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    command = shlex.split(lines[0].split("resume with: ", 1)[1])
    assert command[:2] == ["cuer-agent", "evaluate"]
    resumed = _start(command[1:], tmp_path)
    whole = _start([*STUDY, "--out", "whole"], tmp_path)
    assert resumed.wait(timeout=600) == 0 and whole.wait(timeout=600) == 0
    compared = filecmp.dircmp(tmp_path / "interrupted", tmp_path / "whole")
    assert not compared.left_only and not compared.right_only
    for name in ("agentic", "single_shot"):
        sub = compared.subdirs[name]
        assert not sub.diff_files and not sub.left_only and not sub.right_only, name
    assert not set(compared.diff_files) - {"summary.json", "report.md", "report.html"}
    summaries = [json.loads((tmp_path / run / "summary.json").read_text())
                 for run in ("interrupted", "whole")]
    for summary in summaries:  # the commit may differ (a test run beside a working copy)
        summary.pop("provenance")
    assert summaries[0] == summaries[1]


@pytest.mark.real_model
def test_an_interrupt_during_a_llamacpp_generation_stops_within_5_s(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp", reason="the llamacpp extra is not installed")
    process = _start([*STUDY, "--n", "1", "--backend", "llamacpp", "--out", "run"], tmp_path)
    time.sleep(20)  # the model is loaded in a few seconds; then it generates, in C
    assert process.poll() is None, "the run ended before it could be interrupted"
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    waited = time.monotonic() - sent

    assert process.returncode == INTERRUPTED and waited <= 5.0, (waited, err)
    assert "resume with: cuer-agent evaluate" in err


def test_an_interrupt_swallowed_by_a_finaliser_stops_the_next_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cuer_agent import interrupts
    from cuer_agent.run_dir import RunDir

    monkeypatch.setitem(interrupts._REQUESTED, "signal", 0)

    def stream() -> Iterator[int]:
        try:
            yield 1
        finally:  # where LangGraph's Pregel.stream was when a Ctrl-C was lost
            interrupts.request_interrupt(signal.SIGINT, None)

    generator = stream()
    next(generator)
    lost: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: lost.append(raised.exc_type))
    del generator  # "Exception ignored in: <generator ...>": the interrupt is lost
    gc.collect()
    assert lost == [KeyboardInterrupt]
    run = RunDir(tmp_path)

    with pytest.raises(KeyboardInterrupt):
        run.append("rows.jsonl", {"example_id": "q1"})
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_swallowed_interrupt_is_not_reported_as_an_ignored_exception(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cuer_agent import interrupts

    reported: list[type[BaseException] | None] = []
    hook = interrupts._quiet_about_recorded_interrupts(
        lambda unraisable: reported.append(unraisable.exc_type))
    monkeypatch.setitem(interrupts._REQUESTED, "signal", signal.SIGINT)

    for exc_type in (KeyboardInterrupt, ValueError):
        hook(SimpleNamespace(exc_type=exc_type))

    assert reported == [ValueError]

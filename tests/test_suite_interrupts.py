"""Ctrl-C stops the whole test run, also inside an in-process CLI call.

The CLI turns an interrupt into one line and exit 130 (`cuer_agent.cli._app.user_errors`),
and typer turns any KeyboardInterrupt a command lets through into exit 130 too; a bare
`CliRunner().invoke` hands that back as an ordinary result, so a test would fail (or
even pass) and the run would go on. `conftest.invoke`, the suite's one way to call the
CLI, raises KeyboardInterrupt instead.
"""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest
import typer
from conftest import INTERRUPTED, invoke

from cuer_agent.cli._app import user_errors
from cuer_agent.run_dir import RunDir

pytest_plugins = ["pytester"]


def tiny_app(started: threading.Event | None = None) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @user_errors
    def interrupted() -> None:
        raise KeyboardInterrupt

    @app.command()
    def leaks() -> None:  # an interrupt the command does not handle: typer's exit 130
        raise KeyboardInterrupt

    @app.command()
    def exits(code: int) -> None:
        raise typer.Exit(code)

    @app.command()
    @user_errors
    def waits() -> None:  # runs until a signal stops it, or fails after a minute
        assert started is not None
        started.set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.01)
        raise AssertionError("no KeyboardInterrupt within 60 s of SIGINT")

    return app


@pytest.mark.parametrize("args", [["interrupted"], ["leaks"], ["exits", str(INTERRUPTED)]])
def test_an_interrupted_command_raises_keyboard_interrupt_in_the_test(args: list[str]) -> None:
    with pytest.raises(KeyboardInterrupt):
        invoke(args, app=tiny_app())


@pytest.mark.parametrize("code", [0, 1, 2])
def test_any_other_exit_is_handed_back(code: int) -> None:
    assert invoke(["exits", str(code)], app=tiny_app()).exit_code == code


def test_a_real_sigint_during_a_command_stops_the_test() -> None:
    """SIGINT, as Ctrl-C sends it, to this process while a command runs in it.

    Python's own handler is installed for the test: a process started in the background
    by a shell without job control inherits SIGINT ignored, and the signal would never
    arrive (what is tested is the CLI's answer to it, not how this process was started).
    """
    started = threading.Event()

    def press_ctrl_c() -> None:
        if started.wait(timeout=60):
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    thread = threading.Thread(target=press_ctrl_c)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            invoke(["waits"], app=tiny_app(started))
    finally:
        thread.join()
        signal.signal(signal.SIGINT, previous)
    assert started.is_set()


def test_an_interrupted_study_raises_keyboard_interrupt(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The real CLI, stopped mid-study: it says what it saved and exits 130; the test
    process gets the KeyboardInterrupt."""
    def ctrl_c(self: RunDir, name: str, rows: list[dict]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "append_rows", ctrl_c)
    with pytest.raises(KeyboardInterrupt, match="exit 130"):
        invoke(["run", "--dataset", "synthetic", "--n", "2", "--out", tmp_path / "run",
                "--no-cache", "--no-progress"])


def test_the_test_run_stops_at_the_interrupted_test(pytester: pytest.Pytester) -> None:
    """A session whose second test is interrupted inside `invoke` runs no test after it."""
    tests = Path(__file__).parent
    pytester.makepyfile(test_three=textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tests)!r})
        import typer
        from conftest import invoke

        app = typer.Typer()

        @app.command()
        def ctrl_c() -> None:
            raise KeyboardInterrupt

        @app.command()
        def fine() -> None:
            pass

        def test_first():
            assert invoke(["fine"], app=app).exit_code == 0

        def test_second():
            invoke(["ctrl-c"], app=app)

        def test_third():
            pass
    """))
    run = pytester.inline_run("-p", "no:cacheprovider", no_reraise_ctrlc=True)
    assert run.ret == pytest.ExitCode.INTERRUPTED
    ran = {r.nodeid.split("::")[-1]: r.outcome for r in run.getreports("pytest_runtest_logreport")
           if r.when == "call"}
    assert ran == {"test_first": "passed"}  # the second was stopped, the third never ran
    [interrupt] = run.getcalls("pytest_keyboard_interrupt")
    assert interrupt.excinfo.type is KeyboardInterrupt

"""Shared pytest fixtures, and the suite's one way to call the command line.

`invoke` runs `cuer-agent` in this process; every test calls the CLI through it, so an
interrupted command stops the whole test run (see `invoke`). `studies` makes each
finished study run directory once per test session: a test that only reads a run takes
the shared directory (`studies.get`), a test that damages, resumes or re-reports one
takes its own copy (`studies.copy`).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import typer
from fake_servers import FakeOllamaServer, FakeOpenAIServer
from typer.testing import CliRunner, Result

INTERRUPTED = 130
"""The exit code of an interrupted command (128 + SIGINT): the CLI's answer to Ctrl-C."""

_RUNNER = CliRunner()


def invoke(args: Sequence[str | Path], *, app: typer.Typer | None = None,
           **kwargs: object) -> Result:
    """`cuer-agent ARGS` (or `app ARGS`) in this process, through typer's CliRunner.

    Ctrl-C stops the whole test run: the CLI turns an interrupt into exit 130 (and typer
    turns any KeyboardInterrupt a command lets through into the same), which a bare
    CliRunner reports as an ordinary result, so the run would go on with the next test.
    Here an interrupted command raises KeyboardInterrupt in the test process instead."""
    if app is None:
        from cuer_agent.cli import app as cli_app

        app = cli_app
    argv = [str(a) for a in args]
    result = _RUNNER.invoke(app, argv, **kwargs)  # type: ignore[arg-type]
    if result.exit_code == INTERRUPTED or isinstance(result.exception, KeyboardInterrupt):
        raise KeyboardInterrupt(f"interrupted (exit {result.exit_code}): {' '.join(argv)}")
    return result


# --- finished study runs, made once per session ----------------------------------------

QUIET = ("--no-cache", "--no-progress")
"""Every shared study runs offline: no response cache, no progress bar."""

# The studies more than one module reads. EVALUATE, CUER and RUN are the commands whose
# output bytes tests/data/output_digests.json pins (test_output_digest.py).
EVALUATE = ("evaluate", "--hops", "3", "--n", "8")
CUER = ("cuer", "--dataset", "synthetic", "--n", "8")
RUN = ("run", "--dataset", "synthetic", "--n", "8")
EVALUATE_KINDS = ("evaluate", "--hops", "3", "--n", "4", "--seed", "7",
                  "--faults", "empty_retrieval,query_drift,content_tampering",
                  "--diagnosers", "coverage,llm-judge,frozen-hop")
"""A small evaluate with every kind of work a study hands to its executor: 3 faults, a
probing, a skill-calling and a trace-only diagnoser."""
PROPAGATE = ("propagate", "--hops", "3", "--n", "6", "--seed", "7")
SMALL_PROPAGATE = ("propagate", "--hops", "2", "--n", "2")


def _files(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()}


class Studies:
    """Finished study run directories by command line, each made once per session.

    `get(*args)` runs `cuer-agent ARGS --out DIR --no-cache --no-progress` the first time
    it is asked for those args and returns DIR every time: a test may only read it.
    `copy(*args, to=PATH)` copies it to PATH (a test's own, to damage, resume or rebuild).
    At the end of the session every shared directory must hold the bytes it was made
    with: a test that wrote into one fails the session's teardown, naming the run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._runs: dict[tuple[str, ...], Path] = {}
        self._files: dict[tuple[str, ...], dict[str, str]] = {}

    def get(self, *args: str) -> Path:
        if args not in self._runs:
            out = self.root / f"{len(self._runs)}-{args[0]}"
            result = invoke([*args, "--out", str(out), *QUIET])
            assert result.exit_code == 0, result.output
            self._runs[args] = out
            self._files[args] = _files(out)
        return self._runs[args]

    def copy(self, *args: str, to: Path) -> Path:
        shutil.copytree(self.get(*args), to)
        return to

    def changed(self) -> list[str]:
        """The shared runs whose files are no longer the bytes they were made with."""
        return [" ".join(args) for args, run in self._runs.items()
                if _files(run) != self._files[args]]


@pytest.fixture(scope="session")
def studies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studies]:
    made = Studies(tmp_path_factory.mktemp("studies"))
    yield made
    changed = made.changed()
    assert not changed, f"a test wrote into a shared study run (use studies.copy): {changed}"


# --- the environment and fake servers ---------------------------------------------------

@pytest.fixture(scope="session", autouse=True)
def response_cache_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A command a test runs without `--cache` uses `$CUER_CACHE`, else
    ~/.cache/cuer-agent: the suite must neither write the user's cache nor read answers
    an earlier session (or an earlier version of the code) left there."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUER_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))
        yield


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible chat server on 127.0.0.1 (see `tests.fake_servers`)."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def ollama_server() -> Iterator[FakeOllamaServer]:
    """A fake Ollama server on 127.0.0.1 (see `tests.fake_servers`)."""
    with FakeOllamaServer() as server:
        yield server

"""Shared pytest fixtures, and the suite's one way to call the command line.

`invoke` runs `cuer-agent` in this process; every test calls the CLI through it, so an
interrupted command stops the whole test run (see `invoke`) — directly, or through `cli`
(exit code, stdout, stderr), `cli_text` (exit code, one text) or `run_study` (a study
run offline, the way the shared ones are made). `studies` makes each
finished study run directory once per test session: a test that only reads a run takes
the shared directory (`studies.get`), a test that damages, resumes or re-reports one
takes its own copy (`studies.copy`). `background` runs process-level work — the scenarios
of tests/scenarios.py and the shared studies a test module marks — in subprocesses
started as soon as collection ends, on the core the in-process tests leave idle.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from fake_servers import FakeOllamaServer, FakeOpenAIServer
from typer.testing import CliRunner, Result

INTERRUPTED = 130
"""The exit code of an interrupted command (128 + SIGINT): the CLI's answer to Ctrl-C."""

_RUNNER = CliRunner()


def invoke(args: Sequence[str | Path], *, app: typer.Typer | None = None,
           interrupt_stops_the_run: bool = True, **kwargs: object) -> Result:
    """`cuer-agent ARGS` (or `app ARGS`) in this process, through typer's CliRunner.

    Ctrl-C stops the whole test run: the CLI turns an interrupt into exit 130 (and typer
    turns any KeyboardInterrupt a command lets through into the same), which a bare
    CliRunner reports as an ordinary result, so the run would go on with the next test.
    Here an interrupted command raises KeyboardInterrupt in the test process instead —
    unless `interrupt_stops_the_run=False`: a test of what an interrupt prints gets the
    interrupted command's result back (its app raises the interrupt itself)."""
    if app is None:
        from cuer_agent.cli import app as cli_app

        app = cli_app
    argv = [str(a) for a in args]
    result = _RUNNER.invoke(app, argv, **kwargs)  # type: ignore[arg-type]
    interrupted = (result.exit_code == INTERRUPTED
                   or isinstance(result.exception, KeyboardInterrupt))
    if interrupted and interrupt_stops_the_run:
        raise KeyboardInterrupt(f"interrupted (exit {result.exit_code}): {' '.join(argv)}")
    return result


def cli(*args: str | Path) -> tuple[int, str, str]:
    """`cuer-agent ARGS` (through `invoke`): its exit code, stdout and stderr."""
    result = invoke(args)
    return result.exit_code, result.stdout, result.stderr


def cli_text(*args: str | Path) -> tuple[int, str]:
    """`cuer-agent ARGS` (through `invoke`): its exit code, and stdout then stderr as one
    text (for a test that asks only whether a message was shown)."""
    code, out, err = cli(*args)
    return code, out + err


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


def run_study(command: Sequence[str], out: Path, *extra: str) -> tuple[int, str]:
    """`cuer-agent COMMAND --out OUT --no-cache --no-progress EXTRA`, the way the shared
    studies are made: its exit code, and stdout then stderr as one text."""
    return cli_text(*command, "--out", out, *QUIET, *extra)


def _files(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()}


class Studies:
    """Finished study run directories by command line, each made once per session.

    `get(*args)` runs `cuer-agent ARGS --out DIR --no-cache --no-progress` the first time
    it is asked for those args and returns DIR every time: a test may only read it.
    (A study a module marks `@pytest.mark.background(ARGS)` is made in the background
    lane instead, by the same command in a process of its own.) `copy(*args, to=PATH)`
    copies it to PATH (a test's own, to damage, resume or rebuild). At the end of the
    session every shared directory must hold the bytes it was made with: a test that
    wrote into one fails the session's teardown, naming the run."""

    def __init__(self, root: Path, background: Background | None = None) -> None:
        self.root = root
        self.background = background
        self._runs: dict[tuple[str, ...], Path] = {}
        self._files: dict[tuple[str, ...], dict[str, str]] = {}

    def get(self, *args: str) -> Path:
        if args not in self._runs:
            if self.background is not None and self.background.has(args):
                out = self.background.study(args)
            else:
                out = self.root / f"{len(self._runs)}-{args[0]}"
                code, text = run_study(args, out)
                assert code == 0, text
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
def studies(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studies]:
    made = Studies(tmp_path_factory.mktemp("studies"),
                   request.config.stash.get(_BACKGROUND, None))
    yield made
    changed = made.changed()
    assert not changed, f"a test wrote into a shared study run (use studies.copy): {changed}"


# --- the background lane ------------------------------------------------------------------

SCENARIOS = Path(__file__).with_name("scenarios.py")


@dataclass
class Job:
    """One background job: a scenario of tests/scenarios.py, or a shared study."""

    name: str
    argv: list[str]
    out: Path
    proc: subprocess.Popen[bytes] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    started: float = 0.0
    ended: float = 0.0
    waited: float = 0.0
    """How long tests waited for it (the in-process lane idle)."""
    cpu: float = 0.0
    """CPU seconds of the job's processes (those it waited for)."""


class Background:
    """Process-level work, run in subprocesses of their own beside the in-process tests.

    The jobs the selected tests need — their `background` marks name a scenario of
    tests/scenarios.py, or a shared study's command line — are queued as soon as
    collection ends and `lanes` threads take them in turn, each starting one job and
    waiting for it. The marked studies are one job, queued first (in-process tests read
    them early): a process that runs them one after another in test order
    (`scenarios.studies`), each the same `cuer-agent ARGS --out DIR --no-cache
    --no-progress` the in-process `studies.get` would run. The scenarios follow in the
    order of their tests (those marked `first=True` ahead) at a lower CPU priority
    (`nice`): the tests that read them run last (`pytest_collection_modifyitems`), so
    the in-process tests keep a core while the scenarios take the other.
    `result(what)` waits for a job — starting it at once, beside the lanes, if none has
    reached it — and gives its directory and result.json; `study(args)` waits for one
    study of the studies job. The subprocesses run in sessions of their own (a Ctrl-C
    at the terminal reaches pytest only), and whatever still runs when the session ends
    is killed. `$CUER_TEST_LANES` sets the lanes (default 2; 0: each job starts only
    when a test first needs it, and the tests wait for it)."""

    def __init__(self, root: Path, lanes: int = 2) -> None:
        self.root = root
        self.lanes = lanes
        self.jobs: dict[str, Job] = {}
        self.studies: list[tuple[str, ...]] = []
        self._first: list[str] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.began = time.monotonic()

    def add(self, what: str | Sequence[str], first: bool = False) -> Job:
        """Queue a scenario (by name) or a study (by its command line) once."""
        if not isinstance(what, str):
            args = tuple(what)
            if args not in self.studies:
                assert "studies" not in self.jobs or self.jobs["studies"].proc is None
                self.studies.append(args)
            what = "studies"
        if what not in self.jobs:
            out = self.root / f"{len(self.jobs)}-{what}"
            niced = [] if what == "studies" or not shutil.which("nice") else ["nice", "-n", "10"]
            self.jobs[what] = Job(what, [*niced, sys.executable, str(SCENARIOS), what, str(out)],
                                  out)
        if first and what not in self._first:
            self._first.append(what)
        return self.jobs[what]

    def has(self, args: Sequence[str]) -> bool:
        return tuple(args) in self.studies

    def _start(self, job: Job) -> bool:
        """Start `job` unless it was started (or the lane stopped); True if this call did."""
        with self._lock:
            if job.proc is not None or self._stopped:
                return False
            job.out.mkdir(parents=True, exist_ok=True)
            if job.name == "studies":
                (job.out / "studies.json").write_text(json.dumps(self.studies))
            env = {**os.environ, "CUER_CACHE": str(job.out / "responses.sqlite")}
            job.started = time.monotonic()
            with open(job.out / "log.txt", "wb") as log:
                job.proc = subprocess.Popen(job.argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
            return True

    def _run(self, job: Job) -> None:
        if self._start(job):
            assert job.proc is not None
            try:
                _, status, usage = os.wait4(job.proc.pid, 0)
            except ChildProcessError:  # `stop` killed and reaped it (the session ended first)
                job.proc.wait()
            else:
                job.proc.returncode = os.waitstatus_to_exitcode(status)
                job.cpu = usage.ru_utime + usage.ru_stime
            job.ended = time.monotonic()
            job.done.set()

    def start(self) -> None:
        """Run the queued jobs in turn, in `lanes` threads."""
        first = ["studies"] * ("studies" in self.jobs) + self._first
        order = [*first, *(name for name in self.jobs if name not in first)]
        queued = iter([self.jobs[name] for name in order])

        def lane() -> None:
            while True:
                with self._lock:
                    job = next(queued, None)
                if job is None:
                    return
                self._run(job)

        for i in range(self.lanes):
            threading.Thread(target=lane, name=f"background-lane-{i}", daemon=True).start()

    def _begin(self, job: Job) -> None:
        """Make sure `job` runs: if no lane has started it, start it now, beside them."""
        if job.proc is None:
            threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def _log(self, job: Job) -> str:
        return (job.out / "log.txt").read_text(errors="replace")[-5000:]

    def result(self, what: str) -> tuple[Path, dict[str, Any]]:
        job = self.add(what)
        waiting = time.monotonic()
        self._begin(job)
        job.done.wait()
        job.waited += time.monotonic() - waiting
        assert job.proc is not None
        assert job.proc.returncode == 0, f"background job {job.name} failed:\n{self._log(job)}"
        result = job.out / "result.json"
        return job.out, json.loads(result.read_text()) if result.exists() else {}

    def study(self, args: Sequence[str]) -> Path:
        """The run directory of a queued study, once the studies job has made it."""
        job = self.jobs["studies"]
        out = job.out / str(self.studies.index(tuple(args)))
        waiting = time.monotonic()
        self._begin(job)
        while not (out / "done").exists() and not job.done.wait(0.05):
            pass
        job.waited += time.monotonic() - waiting
        assert (out / "done").exists(), f"{' '.join(args)} failed:\n{self._log(job)}"
        return out / "run"

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        for job in self.jobs.values():
            if job.proc is not None and job.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.proc.pid, signal.SIGKILL)
                job.proc.wait()
            job.done.set()


_BACKGROUND = pytest.StashKey[Background]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that read a background scenario (they use the `background` fixture) run
    last, in their order: the scenarios have the whole session to run beside the rest."""
    items.sort(key=lambda item: "background" in getattr(item, "fixturenames", ()))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Queue the background jobs of the selected tests, in test order, and start."""
    config = session.config
    background = Background(config._tmp_path_factory.mktemp("background"),  # type: ignore[attr-defined]
                            lanes=int(os.environ.get("CUER_TEST_LANES", "2")))
    config.stash[_BACKGROUND] = background
    for item in session.items:
        for mark in item.iter_markers("background"):
            for what in mark.args:
                background.add(what, first=mark.kwargs.get("first", False))
    if not config.option.collectonly:
        background.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    background = session.config.stash.get(_BACKGROUND, None)
    if background is not None:
        background.stop()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What each background job took, and how long tests waited for it."""
    background = config.stash.get(_BACKGROUND, None)
    ran = [job for job in (background.jobs.values() if background else ()) if job.ended]
    if not ran:
        return
    terminalreporter.write_sep("=", "background lane (subprocesses beside the tests)")
    for job in ran:
        terminalreporter.write_line(
            f"{job.ended - job.started:6.1f}s (cpu {job.cpu:5.1f}s)  from "
            f"{job.started - background.began:5.1f}s  tests waited {job.waited:5.1f}s  {job.name}")
    own = resource.getrusage(resource.RUSAGE_SELF)
    terminalreporter.write_line(f"in-process tests: cpu {own.ru_utime + own.ru_stime:.1f}s")


@pytest.fixture(scope="session")
def background(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Background:
    """The session's background lane (see `Background`)."""
    stash = request.config.stash
    if _BACKGROUND not in stash:  # no collection hook ran (a nested session)
        stash[_BACKGROUND] = Background(tmp_path_factory.mktemp("background"))
    return stash[_BACKGROUND]


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

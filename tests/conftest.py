"""Shared pytest fixtures, and the suite's one way to call the command line.

`invoke` runs `cuer-agent` in this process; every test calls the CLI through it, so an
interrupted command stops the whole test run (see `invoke`) — directly, or through `cli`
(exit code, stdout, stderr), `cli_text` (exit code, one text) or `run_study` (a study
run offline, the way the shared ones are made). `studies` makes each
finished study run directory once per test session: a test that only reads a run takes
the shared directory (`studies.get`), a test that damages, resumes or re-reports one
takes its own copy (`studies.copy`). `background` runs process-level work — the scenarios
of tests/scenarios.py and the shared studies a test module marks — in subprocesses
started as soon as collection ends, beside the in-process tests (in the fast lane, one
pytest-xdist worker per core; the first worker runs the jobs, every worker reads them).
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
SMALL_EVALUATE = ("evaluate", "--hops", "2", "--n", "2")
"""The smallest shared evaluate: test_run_configs' `small("evaluate")`, so one study for both."""


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
    waited: float = 0.0
    """How long this process's tests waited for it (their worker idle)."""

    @property
    def ended(self) -> Path:
        """Written by the process that ran the job once it ended: its exit code and times."""
        return self.out / "ended.json"


READER_PATIENCE = 1800.0
"""Seconds a worker that runs no jobs waits for one before it gives up (the worker that
runs them died)."""


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
    (`nice`): the tests that read them run last (`pytest_collection_modifyitems`).
    `result(what)` waits for a job — starting it at once, beside the lanes, if none has
    reached it — and gives its directory and result.json; `study(args)` waits for one
    study of the studies job. The subprocesses run in sessions of their own (a Ctrl-C
    at the terminal reaches pytest only), and whatever still runs when the session ends
    is killed. `$CUER_TEST_LANES` sets the lanes (default 2; 0: each job starts only
    when a test first needs it, and the tests wait for it).

    Under pytest-xdist every worker collects the same tests, so every worker queues the
    same jobs under the same directories (`root` is shared); only the first worker
    (`owner`) runs them, and the others read what it wrote (`Job.ended`, the studies'
    `done` files). The owner lets its jobs finish before its session ends, since another
    worker may still need them."""

    def __init__(self, root: Path, lanes: int = 2, owner: bool = True) -> None:
        self.root = root
        self.lanes = lanes
        self.owner = owner
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

    def _start(self, job: Job) -> float | None:
        """Start `job` unless it was started (or the lane stopped): when this call did,
        the time it started."""
        with self._lock:
            if job.proc is not None or self._stopped or not self.owner:
                return None
            job.out.mkdir(parents=True, exist_ok=True)
            if job.name == "studies":
                (job.out / "studies.json").write_text(json.dumps(self.studies))
            env = {**os.environ, "CUER_CACHE": str(job.out / "responses.sqlite")}
            with open(job.out / "log.txt", "wb") as log:
                job.proc = subprocess.Popen(job.argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
            return time.monotonic()

    def _run(self, job: Job) -> None:
        started = self._start(job)
        if started is None:
            return
        assert job.proc is not None
        try:
            _, status, usage = os.wait4(job.proc.pid, 0)
        except ChildProcessError:  # `stop` killed and reaped it (the session ended first)
            job.proc.wait()
        else:
            job.proc.returncode = os.waitstatus_to_exitcode(status)
            ended = {"returncode": job.proc.returncode,
                     "cpu": usage.ru_utime + usage.ru_stime,
                     "from": started - self.began, "seconds": time.monotonic() - started}
            tmp = job.ended.with_suffix(".tmp")
            tmp.write_text(json.dumps(ended))
            os.replace(tmp, job.ended)
        job.done.set()

    def _order(self) -> list[Job]:
        first = ["studies"] * ("studies" in self.jobs) + self._first
        return [self.jobs[name] for name in
                [*first, *(name for name in self.jobs if name not in first)]]

    def start(self) -> None:
        """Run the queued jobs in turn, in `lanes` threads (the owner only)."""
        if not self.owner:
            return
        queued = iter(self._order())

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
        if self.owner and job.proc is None:
            threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def _has_ended(self, job: Job) -> bool:
        """The job ran to its end (or, in the owner, was stopped)."""
        return job.done.is_set() if self.owner else job.ended.exists()

    def _wait(self, job: Job, ready: Path) -> None:
        """Wait until `ready` exists or the job has ended."""
        waiting = time.monotonic()
        self._begin(job)
        while not ready.exists() and not self._has_ended(job):
            assert time.monotonic() - waiting < READER_PATIENCE, \
                f"background job {job.name}: nothing after {READER_PATIENCE:.0f} s"
            time.sleep(0.05)
        job.waited += time.monotonic() - waiting

    def result(self, what: str) -> tuple[Path, dict[str, Any]]:
        job = self.add(what)
        self._wait(job, job.ended)
        assert job.ended.exists(), f"background job {job.name} did not finish"
        code = json.loads(job.ended.read_text())["returncode"]
        assert code == 0, f"background job {job.name} failed:\n{self._log(job)}"
        result = job.out / "result.json"
        return job.out, json.loads(result.read_text()) if result.exists() else {}

    def _log(self, job: Job) -> str:
        return (job.out / "log.txt").read_text(errors="replace")[-5000:]

    def study(self, args: Sequence[str]) -> Path:
        """The run directory of a queued study, once the studies job has made it."""
        job = self.jobs["studies"]
        out = job.out / str(self.studies.index(tuple(args)))
        self._wait(job, out / "done")
        assert (out / "done").exists(), f"{' '.join(args)} failed:\n{self._log(job)}"
        return out / "run"

    def finish(self) -> None:
        """The owner, with other workers that may still read its jobs: let them end."""
        for job in self._order():
            if job.proc is not None:
                job.done.wait()

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
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
"""This process's pytest-xdist worker id ("gw0", "gw1", ...), or None without xdist."""


def _background_root(config: pytest.Config) -> Path:
    """The background lane's directory: shared by the xdist workers (each has its own
    basetemp inside the controller's) and read by the controller."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return (base.parent if _WORKER else base) / "background"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the default, in addopts): a bare `pytest` — the fast lane — takes
    xdist's worker count (one per core); the real-model and end-to-end lanes, and a run
    of the files or tests you name, stay one process (a model or a cluster per worker
    would only compete for the cores; a few tests would wait for workers to start)."""
    whole_fast_lane = (config.option.markexpr == FAST_LANE
                       and config.args_source == pytest.Config.ArgsSource.TESTPATHS)
    return None if whole_fast_lane else 0


FAST_LANE = "not real_model and not e2e"
"""The fast lane's marker expression (pyproject.toml addopts)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests in the order of what they wait for in the background lane, each kind in its
    own order: first those that wait for nothing, then those that read a shared study
    made there, last those that read a scenario (they use the `background` fixture) —
    so the lane has the longest time to make each. Under xdist (`--dist loadfile`) a
    test file is handed to a worker at its first test: `test_chaos_processes.py`, which
    only reads scenarios, goes last."""
    def waits_for(item: pytest.Item) -> int:
        if "background" in getattr(item, "fixturenames", ()):
            return 2
        return int(any(not isinstance(what, str) for mark in item.iter_markers("background")
                       for what in mark.args))

    items.sort(key=waits_for)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Queue the background jobs of the selected tests, in the order their tests are
    reached when each test file is handed out whole (xdist's `--dist loadfile`: a file
    at its first test), and start."""
    config = session.config
    background = Background(_background_root(config),
                            lanes=int(os.environ.get("CUER_TEST_LANES", "2")),
                            owner=_WORKER in (None, "gw0"))
    config.stash[_BACKGROUND] = background
    file_at: dict[str, int] = {}
    for i, item in enumerate(session.items):
        file_at.setdefault(item.nodeid.split("::", 1)[0], i)
    for item in sorted(session.items, key=lambda item: file_at[item.nodeid.split("::", 1)[0]]):
        for mark in item.iter_markers("background"):
            for what in mark.args:
                background.add(what, first=mark.kwargs.get("first", False))
    if not config.option.collectonly:
        background.start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the background lane; the owner first lets its jobs end when other xdist
    workers may still read them (unless the run was interrupted or told to stop). Then
    note this process's CPU time and waits, for the controller's summary."""
    background = session.config.stash.get(_BACKGROUND, None)
    if background is None:
        return
    others = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1
    if (background.owner and others and exitstatus != pytest.ExitCode.INTERRUPTED
            and not session.shouldstop):
        background.finish()
    background.stop()
    own = resource.getrusage(resource.RUSAGE_SELF)
    background.root.mkdir(parents=True, exist_ok=True)
    (background.root / f"worker-{_WORKER or 'main'}.json").write_text(json.dumps(
        {"cpu": own.ru_utime + own.ru_stime,
         "waited": {job.name: job.waited for job in background.jobs.values()}}))
    if background.owner:
        (background.root / "jobs.json").write_text(json.dumps(
            [job.name for job in background._order()]))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What each background job took, how long tests waited for it, and the CPU time of
    the processes that ran the tests (every xdist worker, or this one)."""
    if _WORKER:
        return
    root = _background_root(config)
    if not (root / "jobs.json").exists():
        return
    workers = {path.stem: json.loads(path.read_text())
               for path in sorted(root.glob("worker-*.json"))}
    jobs = {path.parent.name.split("-", 1)[1]: json.loads(path.read_text())
            for path in root.glob("*/ended.json")}
    if not jobs:
        return
    terminalreporter.write_sep("=", "background lane (subprocesses beside the tests)")
    for name in json.loads((root / "jobs.json").read_text()):
        if name in jobs:
            job = jobs[name]
            waited = sum(w["waited"].get(name, 0.0) for w in workers.values())
            terminalreporter.write_line(
                f"{job['seconds']:6.1f}s (cpu {job['cpu']:5.1f}s)  from {job['from']:5.1f}s  "
                f"tests waited {waited:5.1f}s  {name}")
    for name, worker in workers.items():
        terminalreporter.write_line(f"in-process tests ({name}): cpu {worker['cpu']:.1f}s")


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

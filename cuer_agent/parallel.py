"""Bounded, order-preserving parallelism for per-example work.

`ordered_map(task, items, parallel)` runs `task` on every item and yields the results in
input order, so the rows a study appends — and therefore every output file — are the
same bytes whatever `parallel` says. `Parallelism` says where the work runs:

* ``thread`` (default): `concurrency` threads in this process — right when the work is
  waiting on a model server. Each task runs in its own copy of the caller's context, so
  per-execution collectors (`SkillClient.collect`) never mix. Inside one example, its
  independent forks also run at once (`fan_out`); `request_slot` keeps the requests in
  flight at `concurrency` however many examples and forks are running, so a slow
  example's forks fill the server while others finish.
* ``process``: `workers` local processes — for CPU-bound work (the extractive reader,
  BM25), which threads cannot speed up.
* ``ray``: `workers` Ray actors on a cluster (`ray` is imported only then: an optional
  extra).

With processes and Ray the task is pickled once and sent once per worker (its state
travels as a recipe — backend settings, cache path, corpus — and is rebuilt there);
only the items travel per call. Each worker keeps `concurrency // workers` (at least 1)
items in flight in threads, so a model server still sees `concurrency` requests. Skill
calls a worker makes are counted in the worker's ledger: a task that exposes `ledger`
(see `Counted`) gets each worker's counts merged back into its own.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, Protocol, TypeVar, runtime_checkable

from cuer_agent.errors import ConfigError, CuerError

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("thread", "process", "ray")
RAY_MISSING = "--executor ray needs the optional extra: pip install 'cuer-agent[ray]'"

@dataclass(frozen=True)
class Parallelism:
    """Where per-example work runs and how many items are in flight at once. Results
    are identical for every value; only the wall time changes."""

    executor: str = "thread"
    """thread | process | ray"""
    concurrency: int = 1
    """Items in flight overall (requests a model server sees)."""
    workers: int | None = None
    """Processes or Ray actors; None = this machine's CPUs (Ray: the cluster's)."""
    ray_address: str | None = None
    """Ray cluster to attach to (e.g. "auto"); None = start a local Ray."""

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}; "
                              f"got {self.executor!r}")
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.workers}")
        if self.executor == "thread" and self.workers is not None:
            raise ConfigError("--workers needs --executor process or ray")
        if self.executor != "ray" and self.ray_address is not None:
            raise ConfigError("--ray-address needs --executor ray")
        if self.executor == "ray" and find_spec("ray") is None:
            raise ConfigError(RAY_MISSING)

    def local_workers(self) -> int:
        return self.workers or os.cpu_count() or 1

    def threads_per_worker(self, workers: int) -> int:
        """Items each worker runs at once, so that `concurrency` are in flight overall."""
        return max(1, self.concurrency // workers)


class Tally(Protocol):
    """What a worker's ledger must do (`cuer_agent.llm.cache.Ledger` does): hand over
    what it counted since last asked, and take in another's counts."""

    def take(self) -> Any: ...

    def merge(self, counts: Any) -> None: ...


@runtime_checkable
class Counted(Protocol):
    """A task whose skill calls are counted in `ledger`. When it runs in other processes,
    their counts are sent back with the results and merged into this ledger, so the
    caller's ledger tells what the whole invocation spent."""

    @property
    def ledger(self) -> Tally: ...


def ordered_map(task: Callable[[T], R], items: Iterable[T],
                parallel: Parallelism | int) -> Iterator[R]:
    """`task` over `items`, results in input order. An int means that many threads.
    For ``process`` and ``ray``, `task` must pickle: a module-level object that holds the
    recipe of its state, not a closure."""
    policy = parallel if isinstance(parallel, Parallelism) else Parallelism(concurrency=parallel)
    if policy.executor == "thread":
        return _threads(task, items, policy.concurrency)
    if policy.executor == "process":
        return _processes(task, items, policy)
    return _ray(task, items, policy)


_SLOTS: ContextVar[threading.BoundedSemaphore | None] = ContextVar("cuer_slots", default=None)
"""Model requests allowed in flight at once (set by a threaded `ordered_map`)."""
_FAN_OUT: ContextVar[int] = ContextVar("cuer_fan_out", default=1)
"""Threads one example may use for its independent forks."""


@contextmanager
def request_slot() -> Iterator[None]:
    """Held while one model request is in flight; waits when `concurrency` already are."""
    slots = _SLOTS.get()
    if slots is None:
        yield
        return
    with slots:
        yield


def fan_out(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`fn` over the independent pieces of one example (its forks), results in input
    order: concurrently inside a threaded `ordered_map`, one after another otherwise."""
    width = min(_FAN_OUT.get(), len(items))
    if width <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="cuer-fork") as pool:
        futures = [pool.submit(copy_context().run, fn, item) for item in items]
        return [f.result() for f in futures]


def _threads(task: Callable[[T], R], items: Iterable[T], concurrency: int) -> Iterator[R]:
    if concurrency == 1:
        for item in items:
            yield task(item)
        return
    # The tasks' context (not the caller's) carries the shared request slots.
    context = copy_context()
    context.run(_SLOTS.set, threading.BoundedSemaphore(concurrency))
    context.run(_FAN_OUT.set, concurrency)
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="cuer")
    try:
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(pool.submit(context.copy().run, task, item))
            if len(pending) >= 2 * concurrency:  # bounded look-ahead keeps memory flat
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BaseException:
        # An interrupt (or a failed item) does not wait for the items in flight: their
        # rows were not written, and a rerun redoes them.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


# --- the worker side (a process of the pool, or a Ray actor) ---------------------------------

Batch = tuple[list[Any], Any]
"""A worker's results, in order, and what its ledger counted meanwhile (None: nothing)."""


class TaskHost:
    """A worker's copy of the task, unpickled once. An unpickling error (say, the
    backend cannot be rebuilt there) is kept and raised by every batch, so that the
    caller sees why instead of a dead worker."""

    def __init__(self, blob: bytes) -> None:
        self.task: Callable[[Any], Any] | None = None
        self.error: Exception | None = None
        try:
            self.task = pickle.loads(blob)
        except Exception as exc:
            self.error = exc

    def run(self, batch: list[Any], threads: int) -> Batch:
        """The results of `batch` in order, and what the worker's ledger counted meanwhile
        (taken, so each count travels back once)."""
        if self.error is not None:
            raise self.error
        assert self.task is not None
        results = list(_threads(self.task, batch, threads))
        counts = self.task.ledger.take() if isinstance(self.task, Counted) else None
        return results, counts


def settle(task: Callable[[Any], R], done: Batch) -> list[R]:
    """A worker's batch back in the caller: merge its counts, return its results."""
    results, counts = done
    if counts and isinstance(task, Counted):
        task.ledger.merge(counts)
    return results


# --- local processes -----------------------------------------------------------------------

_host: TaskHost | None = None


def _install(blob: bytes) -> None:
    """Pool initializer: each worker process unpickles the task once. Ctrl-C reaches
    the whole process group; the workers leave it to the parent, which stops them."""
    global _host
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _host = TaskHost(blob)


def _run_installed(batch: list[Any], threads: int) -> Batch:
    assert _host is not None
    return _host.run(batch, threads)


WORKER_PRELOAD = ["cuer_agent.studies.cuer.runner", "cuer_agent.studies.propagation.runner",
                  "cuer_agent.studies.diagnose.runner", "cuer_agent.graphs.agent"]
"""Modules the fork server imports once, so a worker starts with the study code loaded."""


SOCKET_PATH_ROOM = 103 - len("/pymp-12345678/listener-12345678")
"""How long the temp dir's path may be for the fork server: it listens on a socket at
`<temp dir>/pymp-…/listener-…`, and an AF_UNIX path holds 103 bytes and its NUL on
macOS (107 on Linux). Python 3.11's multiprocessing does not shorten a longer one: the
bind fails."""


def _worker_context() -> multiprocessing.context.BaseContext:
    """Not a fork of this process: it holds threads (progress bar) and an open SQLite
    connection, neither of which survives a fork safely. A fork server where there is
    one (Linux, macOS): a clean process, started once per command, that forks each
    worker with `WORKER_PRELOAD` imported — a spawned worker imports the package again
    (a second or two of CPU), and `evaluate` starts a pool per sub-study. Spawn
    elsewhere, and where the temp dir's path is too long for the fork server's socket
    (`SOCKET_PATH_ROOM`; spawned workers talk through pipes)."""
    if ("forkserver" not in multiprocessing.get_all_start_methods()
            or len(tempfile.gettempdir().encode()) > SOCKET_PATH_ROOM):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def _processes(task: Callable[[T], R], items: Iterable[T], policy: Parallelism) -> Iterator[R]:
    workers = policy.local_workers()
    threads = policy.threads_per_worker(workers)
    blob = pickle.dumps(task)  # here, so an unpicklable task fails in the caller
    pool = ProcessPoolExecutor(workers, mp_context=_worker_context(),
                               initializer=_install, initargs=(blob,))
    try:
        pending: deque[Future[Batch]] = deque()
        for batch in _batches(items, threads):
            pending.append(pool.submit(_run_installed, batch, threads))
            if len(pending) >= 2 * workers:
                yield from settle(task, pending.popleft().result())
        while pending:
            yield from settle(task, pending.popleft().result())
    except BaseException:
        # An interrupt (or a failed batch) stops the workers instead of waiting for their
        # batches: those rows were not written, and a rerun redoes them.
        for process in list((pool._processes or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)  # quick: its workers are gone
        raise
    pool.shutdown()


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# --- Ray -------------------------------------------------------------------------------------

def _ray(task: Callable[[T], R], items: Iterable[T], policy: Parallelism) -> Iterator[R]:
    """Spread the items over Ray actors, results back in input order. `ray` is imported
    only here, so it stays an optional extra. The task is put in Ray's object store
    once; each actor (one CPU each) unpickles it once — rebuilding its
    skill client, cache and retriever there — and runs `threads` items at a time (a
    threaded actor), so a model server sees `concurrency` requests in flight overall. Items
    are dealt round-robin with a bounded look-ahead; the driver collects the results in
    order and writes the run directory itself, so the files are those of a local run.

    If Ray is not initialised yet, a local instance is started with `workers` CPUs (or the
    cluster at `ray_address` is attached to); it is left running for the next study of the
    same command, and Ray stops it when the process exits."""
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    todo = list(items)
    if not todo:
        return
    if not ray.is_initialized():
        if policy.ray_address is None:
            ray.init(num_cpus=policy.workers, include_dashboard=False,
                     logging_level=logging.WARNING)
        else:
            ray.init(address=policy.ray_address, logging_level=logging.WARNING)
    # ray 2.x leaves cluster_resources() unannotated: an untyped call under --strict
    cpus = int(ray.cluster_resources().get("CPU", 0))  # type: ignore[no-untyped-call]
    workers = policy.workers or max(1, cpus)
    if workers > cpus:  # the extra actors would wait for a CPU forever
        raise ConfigError(f"--workers {workers} exceeds the {cpus} CPUs of the Ray cluster")
    threads = policy.threads_per_worker(workers)
    host = ray.remote(num_cpus=1, max_concurrency=threads)(TaskHost)  # type: ignore[call-overload]
    blob = ray.put(pickle.dumps(task))
    actors = [host.remote(blob) for _ in range(workers)]
    try:
        pending: deque[Any] = deque()
        for i, item in enumerate(todo):
            pending.append(actors[i % workers].run.remote([item], 1))
            if len(pending) >= 2 * workers * threads:
                yield from settle(task, _ray_get(ray, pending.popleft()))
        while pending:
            yield from settle(task, _ray_get(ray, pending.popleft()))
    finally:
        for actor in actors:
            ray.kill(actor)


def _ray_get(ray: Any, ref: Any) -> Batch:
    """The batch, or our own error as raised in the actor (a one-line CLI error)."""
    try:
        batch: Batch = ray.get(ref)
        return batch
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, CuerError):
            raise exc.cause from None
        raise

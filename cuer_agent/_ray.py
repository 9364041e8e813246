"""`--executor ray`: spread examples over Ray actors, results back in input order.

Imported only when asked for, so `ray` stays an optional extra. The task is put in
Ray's object store once; each actor (one CPU each) unpickles it once — rebuilding its
skill client, cache and retriever there — and runs `threads` items at a time (a
threaded actor), so a model server sees `concurrency` requests in flight overall. Items
are dealt round-robin with a bounded look-ahead; the driver collects the results in
order and writes the run directory itself, so the files are those of a local run.

If Ray is not initialised yet, a local instance is started with `workers` CPUs (or the
cluster at `ray_address` is attached to); it is left running for the next study of the
same command, and Ray stops it when the process exits.
"""

from __future__ import annotations

import logging
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from cuer_agent.errors import ConfigError, CuerError
from cuer_agent.parallel import RAY_MISSING, Batch, Parallelism, TaskHost, settle

T = TypeVar("T")
R = TypeVar("R")


def ray_map(task: Callable[[T], R], items: Iterable[T], policy: Parallelism) -> Iterator[R]:
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
    cpus = int(ray.cluster_resources().get("CPU", 0))
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
                yield from settle(task, _get(ray, pending.popleft()))
        while pending:
            yield from settle(task, _get(ray, pending.popleft()))
    finally:
        for actor in actors:
            ray.kill(actor)


def _get(ray: Any, ref: Any) -> Batch:
    """The batch, or our own error as raised in the actor (a one-line CLI error)."""
    try:
        batch: Batch = ray.get(ref)
        return batch
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, CuerError):
            raise exc.cause from None
        raise

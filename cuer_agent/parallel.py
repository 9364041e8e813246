"""Bounded, order-preserving concurrency for per-example work.

`ordered_map(fn, items, concurrency)` runs `fn` on up to `concurrency` items at once (in
threads: the work is dominated by waiting on model servers) and yields the results in
input order, so the rows a study appends — and therefore every output file — are the
same bytes at concurrency 1 and 16. Each task runs in its own copy of the caller's
context, so per-execution collectors (`SkillClient.collect`) never mix.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from typing import TypeVar

from cuer_agent.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CONCURRENCY = {"extractive": 1, "ollama": 4, "openai": 16}
"""Requests in flight per backend when --concurrency is not given: the extractive reader
is CPU-bound Python (threads would only add overhead), a local Ollama serves a few
requests at once, an OpenAI-compatible server (vLLM, hosted APIs) many."""


def default_concurrency(backend: str) -> int:
    return DEFAULT_CONCURRENCY.get(backend, 4)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], concurrency: int) -> Iterator[R]:
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be >= 1, got {concurrency}")
    if concurrency == 1:
        for item in items:
            yield fn(item)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="cuer") as pool:
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(pool.submit(copy_context().run, fn, item))
            if len(pending) >= 2 * concurrency:  # bounded look-ahead keeps memory flat
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

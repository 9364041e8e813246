"""Order-preserving bounded concurrency."""

from __future__ import annotations

import random
import threading
import time

import pytest

from cuer_agent.errors import ConfigError
from cuer_agent.parallel import default_concurrency, ordered_map


def test_results_come_back_in_input_order_whatever_finishes_first() -> None:
    rng = random.Random(0)
    delays = [rng.uniform(0, 0.01) for _ in range(40)]

    def work(i: int) -> int:
        time.sleep(delays[i])
        return i * i

    assert list(ordered_map(work, range(40), 8)) == [i * i for i in range(40)]


def test_no_more_than_concurrency_tasks_run_at_once() -> None:
    running, peak, lock = 0, 0, threading.Lock()

    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.005)
        with lock:
            running -= 1
        return i

    list(ordered_map(work, range(30), 3))
    assert peak <= 3


def test_concurrency_below_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--concurrency"):
        list(ordered_map(str, [1], 0))


def test_defaults_are_per_backend() -> None:
    assert default_concurrency("extractive") == 1
    assert default_concurrency("openai") > default_concurrency("ollama") > 1

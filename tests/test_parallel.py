"""Order-preserving bounded concurrency."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cuer_agent.errors import ConfigError
from cuer_agent.llm.backends import BackendReply, SkillClient, default_concurrency
from cuer_agent.llm.cache import ResponseCache
from cuer_agent.llm.skills import PlanRequest
from cuer_agent.parallel import fan_out, ordered_map


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


class _SlowBackend:
    """Counts requests in flight and in all; replies after a short wait."""

    name, model = "slow", "m"

    def __init__(self) -> None:
        self.calls = self.running = self.peak = 0
        self.lock = threading.Lock()

    def decoding(self) -> dict[str, Any]:
        return {}

    def render(self, skill: str, request: BaseModel) -> Any:
        return request.model_dump(mode="json")

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(0.01)
        with self.lock:
            self.running -= 1
        return BackendReply(text=json.dumps({"action": "answer", "subquery": ""}))


def _plan(i: int) -> PlanRequest:
    return PlanRequest(question=f"q{i}", hop=1, hop_budget=2, history=())


def test_forks_fan_out_but_requests_in_flight_stay_at_concurrency() -> None:
    backend = _SlowBackend()
    skills = SkillClient(backend)

    def example(i: int) -> list[str]:  # each example: 8 independent forks
        return fan_out(lambda j: skills("plan", _plan(100 * i + j)).status, list(range(8)))

    results = list(ordered_map(example, range(6), 3))
    assert results == [["ok"] * 8] * 6
    assert backend.calls == 48
    assert backend.peak == 3  # forks filled the slots, and never more than 3


def test_fan_out_outside_a_threaded_map_runs_in_order_in_this_thread() -> None:
    threads = set()

    def piece(j: int) -> int:
        threads.add(threading.get_ident())
        return j * 2

    assert fan_out(piece, [1, 2, 3]) == [2, 4, 6]
    assert threads == {threading.get_ident()}


def test_concurrent_identical_requests_reach_the_server_once(tmp_path: Path) -> None:
    backend = _SlowBackend()
    skills = SkillClient(backend, cache=ResponseCache(tmp_path / "c.sqlite"))
    results = list(ordered_map(lambda i: skills("plan", _plan(i % 2)).status, range(16), 8))
    assert results == ["ok"] * 16
    assert backend.calls == 2  # single flight: the others waited and read the cache
    assert skills.ledger.to_dict()["cache_hits"] == 14


def test_worker_processes_start_when_the_temp_dir_is_too_long_for_a_socket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from cuer_agent.parallel import SOCKET_PATH_ROOM, Parallelism

    long_dir = tmp_path / ("d" * max(1, SOCKET_PATH_ROOM + 1 - len(str(tmp_path))))
    long_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_dir))
    policy = Parallelism(executor="process", concurrency=2, workers=2)
    assert list(ordered_map(abs, [-3, 2, -1], policy)) == [3, 2, 1]

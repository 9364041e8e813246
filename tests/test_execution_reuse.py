"""What makes executions cheap without changing them: a repeated execution is reused
(with repeatable skills), snapshots share unchanged values (our nodes never edit what
they read), and forks' checkpoints are kept without an encode-decode round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recording import Recorder
from test_execution import EXAMPLE, PASSAGES

from cuer_agent.config import PropagationConfig
from cuer_agent.data import load_dataset
from cuer_agent.execution import AgentConfig, Executor, RunResult, identity
from cuer_agent.graphs.spec import OurAgentSpec
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.cache import ResponseCache
from cuer_agent.llm.extractive import ExtractiveBackend
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.studies._common.dataset_run import retriever_factory
from cuer_agent.studies.propagation.runner import example_rows


def _streams(monkeypatch: pytest.MonkeyPatch) -> list[RunResult]:
    """Every result the executor actually streamed (reused ones are not)."""
    streamed: list[RunResult] = []
    original = Executor._stream

    def counting(self: Executor, *args: Any, **kwargs: Any) -> tuple[RunResult, Any]:
        result, log = original(self, *args, **kwargs)
        streamed.append(result)
        return result, log

    monkeypatch.setattr(Executor, "_stream", counting)
    return streamed


def test_a_repeated_fork_is_reused_and_its_requests_are_counted_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skills = SkillClient(Recorder(), cache=ResponseCache(tmp_path / "cache.sqlite"))
    executor = Executor(skills, AgentConfig())
    base = executor.run(EXAMPLE, BM25Retriever.from_passages(PASSAGES))
    streamed = _streams(monkeypatch)
    with skills.collect() as first:
        one = executor.fork(base, 2, "plan", identity)
    with skills.collect() as second:
        two = executor.fork(base, 2, "plan", identity)
    assert len(streamed) == 1
    assert list(first) == list(second) and len(first) > 0
    assert (first.prompt_tokens, first.parse_failures) == (second.prompt_tokens,
                                                           second.parse_failures)
    assert one.trace.model_dump_json() == two.trace.model_dump_json()
    assert one.snapshots == two.snapshots and one.snapshots is not two.snapshots
    ledger = skills.ledger.to_dict()  # what this process did: the repeat was not made
    assert ledger["reused"] == len(second)


def test_executions_are_not_reused_when_the_skills_may_answer_differently(
        monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()  # no cache, and not declared deterministic: ask again
    executor = Executor(SkillClient(recorder), AgentConfig())  # type: ignore[arg-type]
    base = executor.run(EXAMPLE, BM25Retriever.from_passages(PASSAGES))
    streamed = _streams(monkeypatch)
    before = len(recorder.requests)
    executor.fork(base, 2, "plan", identity)
    first = len(recorder.requests) - before
    executor.fork(base, 2, "plan", identity)
    assert len(streamed) == 2
    assert first > 0 and len(recorder.requests) - before == 2 * first


def test_no_snapshot_changes_after_it_was_taken_across_faults_and_probes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Snapshots share unchanged values (`shares_state`) and checkpoints are stored as is
    # (`InProcessSerializer`): both are exact only if nothing edits a value in place —
    # neither a later node of the same run, nor a fork, probe or study reading it.
    taken: list[tuple[dict[str, Any], str]] = []
    step_key = OurAgentSpec.step_key

    def remembering(self: OurAgentSpec, state: dict[str, Any], node: str) -> str:
        taken.append((state, json.dumps(state, sort_keys=True)))  # as it is when taken
        return step_key(self, state, node)

    monkeypatch.setattr(OurAgentSpec, "step_key", remembering)
    dataset = load_dataset("synthetic", n=3, seed=0, hops=3)
    executor = Executor(SkillClient(ExtractiveBackend()), AgentConfig())
    retrievers = retriever_factory(dataset)
    for example in dataset.examples:
        retriever = retrievers(example)
        assert example_rows(example, executor, retriever, [], PropagationConfig())
        clean = executor.run(example, retriever)
        for run in (clean, executor.repair_and_regenerate(clean, 1)):
            executor.continue_retrieving(run)
            executor.rerun_hop(run, 1)
            executor.reanswer(run, {1: []})
    assert len(taken) > 100
    changed = [text for state, text in taken if json.dumps(state, sort_keys=True) != text]
    assert changed == []

"""VERIFY has consequences: an unsupported hop is retried, every attempt stays observable."""

from __future__ import annotations

from recording import Recorder
from varenia import CITY, DIRECTOR, QUESTION, example_over

from cuer_agent.data import Passage
from cuer_agent.execution import AgentConfig, Executor, RunResult
from cuer_agent.interventions.persistence import FaultCondition
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.skills import PlanRequest
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.trace import Trace

PASSAGES = (
    Passage(title="Quorin Rising", index=0,
            text="Quorin Rising is a 1987 drama film. It was directed by Orlan Vessimer."),
    DIRECTOR,
    CITY,
)
EXAMPLE = example_over(PASSAGES)


def plans(recorder: Recorder) -> list[PlanRequest]:
    return [r for _, r in recorder.requests if isinstance(r, PlanRequest)]


def empty_at_hop_1() -> FaultCondition:
    """Hop 1's sub-query (the question) meets an empty retrieval, whenever it is asked."""
    return FaultCondition(1, "query", faulted_query=QUESTION,
                          evidence_fault=lambda _q, _clean: [])


def run(retries: int = 1, hop_budget: int = 3) -> tuple[RunResult, Recorder]:
    recorder = Recorder()
    executor = Executor(SkillClient(recorder),
                        AgentConfig(hop_budget=hop_budget, retries_per_hop=retries))
    result = executor.run(EXAMPLE, BM25Retriever.from_passages(PASSAGES),
                          condition=empty_at_hop_1())
    return result, recorder


def test_an_unsupported_hop_is_retried_with_a_reformulated_subquery() -> None:
    result, _ = run()
    hop1 = result.trace.hops[0]
    assert hop1.attempt == 2 and len(hop1.attempts) == 1
    first = hop1.attempts[0]
    assert first.failed and first.subquery == QUESTION and not first.retrieved
    assert hop1.subquery != QUESTION and hop1.finding == "Orlan Vessimer"
    assert result.trace.answer == "Varenia"


def test_the_retry_request_says_it_is_a_retry_and_shows_the_failed_attempt() -> None:
    _, recorder = run()
    retry = next(p for p in plans(recorder) if p.retry)
    assert retry.hop == 1 and retry.history == ()
    assert [a.subquery for a in retry.retry] == [QUESTION]
    assert retry.retry[0].support == "unsupported"


def test_every_attempt_is_observable_with_its_attempt_number() -> None:
    result, _ = run()
    hop1_steps = [(s.action.value, s.attempt) for s in result.trace.steps if s.hop == 1]
    assert hop1_steps == [("PLAN", 1), ("RETRIEVE", 1), ("SELECT", 1), ("INFER", 1),
                          ("VERIFY", 1), ("PLAN", 2), ("RETRIEVE", 2), ("SELECT", 2),
                          ("INFER", 2), ("VERIFY", 2)]
    again = Trace.from_json(result.trace.to_json())
    assert again == result.trace  # attempts round-trip


def test_no_retry_budget_means_no_retry() -> None:
    result, recorder = run(retries=0)
    assert not result.trace.hops[0].attempts
    assert all(not p.retry for p in plans(recorder))
    assert result.trace.answer != "Varenia"


def test_the_retry_budget_is_separate_from_the_hop_budget() -> None:
    result, _ = run(hop_budget=1)
    assert len(result.trace.hops) == 1 and result.trace.hops[0].attempt == 2


def test_a_hop_that_fails_every_attempt_stops_after_its_retries() -> None:
    executor = Executor(SkillClient(Recorder()), AgentConfig(retries_per_hop=2))
    nothing = FaultCondition(1, "hop", evidence_fault=lambda _q, _clean: [])
    result = executor.run(EXAMPLE, BM25Retriever.from_passages(PASSAGES), condition=nothing)
    hop1 = result.trace.hops[0]
    assert hop1.attempt == 3 and all(a.failed for a in (*hop1.attempts, hop1))
    assert len({a.subquery for a in (*hop1.attempts, hop1)}) == 3

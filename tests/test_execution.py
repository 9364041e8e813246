"""Running the agent, and forking it: exact, free resume and suffix-only re-execution.

Vocabulary (see `cuer_agent.execution`): a *boundary* is the state after a node of hop
h; a *fork* edits that state and resumes the same compiled graph; the *prefix* is
everything before the boundary and must never run again; the *suffix* is what the agent
regenerates.
"""

from __future__ import annotations

import pytest
from recording import Recorder
from varenia import CITY, DIRECTOR, example_over

from cuer_agent.data import Passage
from cuer_agent.execution import (
    AgentConfig,
    Executor,
    RunResult,
    force_answer,
    identity,
    replace_evidence,
    replace_subquery,
)
from cuer_agent.graphs.nodes import BUDGET_SPENT
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.cache import ResponseCache
from cuer_agent.llm.extractive import ExtractiveBackend
from cuer_agent.retrieval import BM25Retriever

PASSAGES = (
    Passage(title="Quorin Rising", index=0,
            text="Quorin Rising is a 1987 drama film directed by Orlan Vessimer. "
                 "The film was produced by Halvek Studios."),
    DIRECTOR,
    CITY,
    Passage(title="Quorin Falls", index=3,
            text="Quorin Falls is a 1990 film directed by Tadeo Vessimer."),
    Passage(title="Tadeo Vessimer", index=4,
            text="Tadeo Vessimer was born in Kettel Crossing, a town in Ostravia."),
)
EXAMPLE = example_over(PASSAGES,
                       supporting_titles=("Quorin Rising", "Orlan Vessimer", "Kettel Harbor"))


def make_executor(**config: object) -> tuple[Executor, Recorder]:
    recorder = Recorder(ExtractiveBackend(), [])
    return Executor(SkillClient(recorder), AgentConfig(**config)), recorder  # type: ignore[arg-type]


def base_run(executor: Executor) -> RunResult:
    return executor.run(EXAMPLE, BM25Retriever.from_passages(PASSAGES))


def test_agent_trace_follows_plan_retrieve_read_per_hop() -> None:
    executor, _ = make_executor()
    run = base_run(executor)
    hop_actions = ["PLAN", "RETRIEVE", "SELECT", "INFER", "VERIFY"]
    n = len(run.trace.hops)
    assert n >= 1
    assert run.trace.actions[: 5 * n] == hop_actions * n
    assert run.trace.actions[-1] == "ANSWER"
    assert run.trace.status == "ok"


def test_agent_answers_the_constructed_three_hop_question() -> None:
    executor, _ = make_executor()
    run = base_run(executor)
    assert [h.finding for h in run.trace.hops] == ["Orlan Vessimer", "Kettel Harbor", "Varenia"]
    assert run.trace.answer == "Varenia"


def test_same_run_twice_gives_identical_trace_bytes() -> None:
    executor, _ = make_executor()
    assert base_run(executor).trace.to_json() == base_run(executor).trace.to_json()


@pytest.mark.parametrize("boundary", ["plan", "retrieve", "read"])
def test_identity_fork_reproduces_the_base_trace_byte_for_byte(boundary: str) -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    for hop in range(1, len(base.trace.hops) + 1):
        fork = executor.fork(base, hop, boundary, identity)  # type: ignore[arg-type]
        assert fork.trace.to_json() == base.trace.to_json(), (hop, boundary)


def test_fork_spends_no_skill_call_on_the_prefix() -> None:
    executor, recorder = make_executor()
    base = base_run(executor)
    recorder.requests.clear()
    fork = executor.fork(base, 2, "retrieve", identity)
    # Suffix after retrieve of hop 2: read(2), plan(3), read(3), answer → 4 skill calls;
    # the last plan sees the hop budget spent and answers without one.
    assert fork.nodes == ["read", "plan", "retrieve", "read", "plan", "answer"]
    assert [skill for skill, _ in recorder.requests] == ["read", "plan", "read", "answer"]
    assert all(getattr(r, "hop", 2) >= 2 for _, r in recorder.requests)


def test_evidence_fork_changes_only_the_suffix() -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    other = next(p for p in PASSAGES if p.title == "Quorin Falls")
    from cuer_agent.retrieval import chunk_passages
    swapped = [chunk_passages([other])[0].to_evidence(rank=1, score=1.0).model_dump(mode="json")]
    fork = executor.fork(base, 1, "retrieve", replace_evidence(swapped))
    first = fork.trace.hops[0].first_attempt()
    assert first.retrieved[0].title == "Quorin Falls"
    assert fork.trace.steps[1].state.in_view == (swapped[0]["id"],)  # RETRIEVE step rewritten
    assert fork.trace.steps[0] == base.trace.steps[0]  # PLAN of hop 1 untouched
    # The swapped passage is about another film: VERIFY finds the hop unsupported, and the
    # agent's retry (a one-shot edit holds no longer) reads the right one.
    assert (first.finding, first.support) == ("Tadeo Vessimer", "unsupported")
    assert fork.trace.hops[0].finding == base.trace.hops[0].finding


def test_subquery_fork_reruns_the_hop_from_retrieve() -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    fork = executor.fork(base, 1, "plan", replace_subquery("Who directed Quorin Falls?"))
    assert fork.nodes[0] == "retrieve"
    assert fork.trace.hops[0].subquery == "Who directed Quorin Falls?"
    assert fork.trace.steps[0].state.query == "Who directed Quorin Falls?"


@pytest.mark.parametrize("hop", [1, 2, 3])
def test_forced_answer_spends_a_skill_call_on_the_answer_only(hop: int) -> None:
    executor, recorder = make_executor()
    base = base_run(executor)
    recorder.requests.clear()
    fork = executor.fork(base, hop - 1, "read", force_answer(hop - 1))
    assert fork.nodes == ["plan", "answer"]
    assert [skill for skill, _ in recorder.requests] == ["answer"]
    assert len(fork.trace.hops) == hop - 1


@pytest.mark.parametrize("hop", [1, 2, 3])
def test_forced_answer_leaves_the_note_of_a_spent_budget(hop: int) -> None:
    """A forced stop looks like a run whose budget ran out: the same PLAN note."""
    executor, _ = make_executor()
    base = base_run(executor)
    fork = executor.fork(base, hop - 1, "read", force_answer(hop - 1))
    plan_notes = [s.note for s in fork.trace.steps if s.action.value == "PLAN"]
    assert plan_notes[-1] == BUDGET_SPENT == [s.note for s in base.trace.steps
                                              if s.action.value == "PLAN"][-1]


def test_reanswer_keeps_hops_and_runs_only_answer() -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    evidence = [ev.model_dump(mode="json") for ev in base.trace.hops[0].retrieved[:1]]
    frozen = executor.reanswer(base, {2: evidence})
    assert frozen.nodes == ["answer"]
    assert [h.subquery for h in frozen.trace.hops] == [h.subquery for h in base.trace.hops]
    assert frozen.trace.hops[1].selected == (evidence[0]["id"],)


def test_repair_and_regenerate_replans_hop_j_and_continues() -> None:
    executor, _ = make_executor(retries_per_hop=0)  # an agent that cannot retry the drift
    base = base_run(executor)
    drifted = executor.fork(base, 2, "plan", replace_subquery("Halvek Studios"))
    assert drifted.trace.answer != base.trace.answer
    repaired = executor.repair_and_regenerate(drifted, 2)
    assert repaired.nodes[0] == "plan"
    assert repaired.trace.to_json() == base.trace.to_json()


def test_rerun_with_cache_makes_zero_backend_calls(tmp_path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    first = SkillClient(ExtractiveBackend(), cache=cache)
    Executor(first, AgentConfig()).run(EXAMPLE, BM25Retriever.from_passages(PASSAGES))
    second = SkillClient(ExtractiveBackend(), cache=ResponseCache(tmp_path / "cache.sqlite"))
    run = Executor(second, AgentConfig()).run(EXAMPLE, BM25Retriever.from_passages(PASSAGES))
    assert first.ledger.total("calls") > 0
    assert second.ledger.total("calls") == 0
    assert second.ledger.total("cache_hits") == first.ledger.total("calls")
    assert run.trace.cost.llm_calls == first.ledger.total("calls")


def test_reader_never_receives_gold_labels() -> None:
    """Every request is built from observable state; changing the gold changes nothing."""
    executor, recorder = make_executor()
    base = base_run(executor)
    relabelled = EXAMPLE.model_copy(update={"answer": "Ostravia", "aliases": ("Nowhere",),
                                            "supporting_titles": ("Quorin Falls",)})
    again = executor.run(relabelled, BM25Retriever.from_passages(PASSAGES))
    assert again.trace.to_json() == base.trace.to_json()
    for skill, request in recorder.requests:
        fields = set(type(request).model_fields)
        assert not fields & {"answer", "aliases", "supporting_titles", "gold"}, skill
        assert getattr(request, "gold_answer", None) is None


def test_hop_budget_caps_the_hops() -> None:
    executor, _ = make_executor(hop_budget=1)
    run = base_run(executor)
    assert len(run.trace.hops) == 1
    assert run.trace.actions[-1] == "ANSWER"


def test_single_shot_trace_is_retrieve_select_answer() -> None:
    executor, _ = make_executor(mode="single_shot")
    run = base_run(executor)
    assert run.trace.actions == ["RETRIEVE", "SELECT", "ANSWER"]
    assert run.trace.mode == "single_shot"
    assert len(run.trace.hops) == 1 and len(run.trace.hops[0].retrieved) == 5


def test_identity_forks_on_30_synthetic_examples_are_exact_and_free() -> None:
    """The issue's bar: every hop × boundary gives the base trace byte for byte, runs
    exactly the base run's suffix, and makes skill calls for suffix nodes only."""
    from cuer_agent.data import load_dataset
    dataset = load_dataset("synthetic", n=30, hops=3, seed=7)
    retriever = BM25Retriever.from_passages(dataset.corpus)
    executor, recorder = make_executor()
    forks = 0
    for example in dataset.examples:
        base = executor.run(example, retriever)
        for hop in range(1, len(base.trace.hops) + 1):
            for boundary in ("plan", "retrieve", "read"):
                recorder.requests.clear()
                fork = executor.fork(base, hop, boundary, identity)  # type: ignore[arg-type]
                assert fork.trace.to_json() == base.trace.to_json()
                key = executor.boundary_key(base, hop, boundary)  # type: ignore[arg-type]
                suffix = base.nodes_run[base.nodes_run.index(key) + 1:]
                assert fork.nodes_run == suffix
                # retrieve calls no skill, nor does a plan that finds the budget spent
                skill_nodes = [k for k in suffix if k.split(":")[1] != "retrieve"
                               and k != f"{executor.config.hop_budget + 1}:plan"]
                assert len(recorder.requests) == len(skill_nodes)
                forks += 1
    assert forks >= 30 * 3 * 2

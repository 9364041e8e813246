"""Faults as conditions of the tools: keyed to the query, held in probes, invisible."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke

from cuer_agent.data import load_dataset
from cuer_agent.execution import AgentConfig, Executor, RunResult, identity
from cuer_agent.interventions import get_fault
from cuer_agent.interventions.facts import fact_source
from cuer_agent.interventions.persistence import FaultCondition, fault_condition, query_key
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.extractive import ExtractiveBackend
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.studies.propagation.injection import inject
from cuer_agent.studies.propagation.runner import (
    PropagationConfig,
    _Injector,
    distractor_answers,
    example_rows,
)

REAL_ID = re.compile(r"[0-9a-f]{12}-c\d+")


@cache
def world(redundancy: object = "mix") -> tuple[Any, BM25Retriever]:
    data = load_dataset("synthetic", n=10, hops=3, seed=5, redundancy=redundancy)
    return data, BM25Retriever.from_passages(data.corpus)


def executor(retries: int = 1) -> Executor:
    return Executor(SkillClient(ExtractiveBackend()), AgentConfig(retries_per_hop=retries))


@cache
def answered(redundancy: object = "mix") -> int:
    """The first example whose clean run is right, in 3 hops, none of them retried."""
    data, retriever = world(redundancy)
    for i, ex in enumerate(data.examples):
        trace = executor().run(ex, retriever).trace
        if (trace.answer == ex.answer and len(trace.hops) == 3
                and not any(h.attempts for h in trace.hops)):
            return i
    raise AssertionError("no example answered cleanly")


def fault_fork(name: str, hop: int, persistence: str = "query", retries: int = 1,
               example: int | None = None, redundancy: object = "mix"
               ) -> tuple[Executor, RunResult, RunResult]:
    data, retriever = world(redundancy)
    ex = data.examples[answered(redundancy) if example is None else example]
    agent = executor(retries)
    base = agent.run(ex, retriever)
    config = PropagationConfig(fault_persistence=persistence)  # type: ignore[arg-type]
    inp = _Injector(ex, base, retriever, [], config, fact_source(data)).fault_input(hop, 5)
    spec = get_fault(name)
    outcome = spec.apply(inp)
    assert outcome.applied, outcome.record.skipped
    fork = inject(agent, base, spec, inp, outcome, persistence)  # type: ignore[arg-type]
    return agent, base, fork


# --- the condition ---------------------------------------------------------------------

def test_a_query_keyed_fault_answers_the_same_question_again_in_any_word_order() -> None:
    _, retriever = world()
    cond = FaultCondition(2, "query", faulted_query="Pell Varnick born city",
                          evidence_fault=lambda _q, _clean: [])
    assert cond.retrieve(retriever, 2, "city born Pell Varnick", 5) == []
    assert cond.retrieve(retriever, 3, "Pell Varnick born city", 5) == []  # any hop
    assert cond.retrieve(retriever, 2, "Pell Varnick birthplace", 5) != []  # asked differently
    assert query_key("Where was X born?") == query_key("born X where was")


def test_hop_persistence_faults_every_retrieval_at_its_hop_only() -> None:
    _, retriever = world()
    cond = FaultCondition(2, "hop", faulted_query="a", evidence_fault=lambda _q, _clean: [])
    assert cond.retrieve(retriever, 2, "anything at all", 5) == []
    assert cond.retrieve(retriever, 1, "a city", 5) != []


def test_query_drift_corrupts_the_first_attempt_unless_it_holds_for_the_hop() -> None:
    drift = FaultCondition(2, "query", drift=lambda q: "drifted")
    assert drift.issue(2, 1, "planned") == "drifted"
    assert drift.issue(2, 2, "planned") == "planned"  # the agent's own retry
    assert drift.issue(1, 1, "planned") == "planned"
    held = FaultCondition(2, "hop", drift=lambda q: "drifted")
    assert held.issue(2, 2, "planned") == "drifted"


def test_a_repaired_hop_is_clean_and_lifts_a_budget_cut_below_it() -> None:
    _, retriever = world()
    cond = FaultCondition(2, "hop", evidence_fault=lambda _q, _clean: [],
                          drift=lambda q: "drifted", budget_cap=1)
    repaired = cond.repaired(2)
    assert repaired.retrieve(retriever, 2, "a city", 5) != []
    assert repaired.issue(2, 1, "planned") == "planned"
    assert cond.hop_budget(3) == 1 and repaired.hop_budget(3) == 3
    assert cond.repaired(1).hop_budget(3) == 1


# --- recovery takes noticing and asking differently ---------------------------------------

def test_under_query_persistence_the_agent_recovers_by_asking_differently() -> None:
    _, base, fork = fault_fork("empty_retrieval", 2)
    hop2 = fork.trace.hops[1]
    assert hop2.attempts and hop2.attempts[0].subquery == base.trace.hops[1].subquery
    assert not hop2.attempts[0].retrieved and hop2.retrieved
    assert fork.trace.answer == base.trace.answer


def test_under_hop_persistence_asking_differently_does_not_help() -> None:
    _, base, fork = fault_fork("empty_retrieval", 2, persistence="hop")
    hop2 = fork.trace.hops[1]
    assert hop2.attempts and not hop2.retrieved
    assert fork.trace.answer != base.trace.answer


def test_under_corpus_persistence_a_fact_stated_once_is_not_found_by_asking_again() -> None:
    _, base, fork = fault_fork("empty_retrieval", 2, persistence="corpus", redundancy=1)
    hop2 = fork.trace.hops[1]
    assert hop2.attempts and not hop2.attempts[0].retrieved  # noticed, and retried
    withheld = set(base.trace.hops[1].selected)
    assert not withheld & {e.id for h in fork.trace.hops for a in (*h.attempts, h)
                           for e in a.retrieved}
    assert fork.trace.answer != base.trace.answer


def test_under_corpus_persistence_a_fact_stated_thrice_can_be_found_elsewhere() -> None:
    _, base, fork = fault_fork("irrelevant_evidence", 2, persistence="corpus", redundancy=3)
    assert set(fork.trace.hops[1].selected) != set(base.trace.hops[1].selected)
    assert fork.trace.hops[1].finding == base.trace.hops[1].finding
    assert fork.trace.answer == base.trace.answer


def test_once_is_a_one_shot_edit_that_nothing_holds() -> None:
    _, _, fork = fault_fork("empty_retrieval", 2, persistence="once")
    assert fork.condition is None


def test_early_termination_stops_where_a_spent_budget_would() -> None:
    _, base, fork = fault_fork("early_termination", 2)
    assert len(fork.trace.hops) == 1
    notes = [s.note for s in fork.trace.steps if s.action.value == "PLAN"]
    assert notes[-1] in {s.note for s in base.trace.steps if s.action.value == "PLAN"}


# --- probes run under the fault ----------------------------------------------------------

def test_regenerating_from_an_earlier_hop_meets_the_fault_again() -> None:
    agent, base, fork = fault_fork("empty_retrieval", 2, retries=0)
    assert fork.trace.answer != base.trace.answer
    again = agent.repair_and_regenerate(fork, 1)
    assert again.trace.to_json() == fork.trace.to_json()  # not a clean restart
    repaired = agent.repair_and_regenerate(fork, 2)
    assert repaired.trace.answer == base.trace.answer


def test_rerunning_the_faulted_hop_repairs_only_that_hop() -> None:
    agent, base, fork = fault_fork("empty_retrieval", 2, retries=0)
    assert agent.rerun_hop(fork, 2) == base.trace.hops[1]
    assert agent.rerun_hop(fork, 1) == fork.trace.hops[0]


def test_continuing_a_stopped_run_lifts_the_forced_stop() -> None:
    agent, base, fork = fault_fork("early_termination", 3)
    assert len(fork.trace.hops) == 2
    assert agent.continue_retrieving(fork).trace.answer == base.trace.answer


def test_a_condition_survives_a_fork_of_a_fork() -> None:
    agent, _, fork = fault_fork("empty_retrieval", 2, retries=0)
    assert agent.fork(fork, 1, "read", identity).condition is fork.condition


# --- injections are invisible ------------------------------------------------------------

@cache
def study_rows() -> list[dict[str, Any]]:
    data, retriever = world()
    agent = executor()
    rows = []
    config = PropagationConfig()
    for ex in data.examples:
        rows += example_rows(ex, agent, retriever, distractor_answers(data, ex, 50), config,
                             facts=fact_source(data))
    return rows


def injected_rows() -> list[dict[str, Any]]:
    return [r for r in study_rows() if r["trace"] is not None
            and r["record"]["condition"] != "clean"]


def test_every_evidence_id_of_an_injected_trace_has_the_real_form() -> None:
    for row in injected_rows():
        for hop in row["trace"]["hops"]:
            for attempt in [*hop["attempts"], hop]:
                for ev in attempt["retrieved"]:
                    assert REAL_ID.fullmatch(ev["id"]), (row["record"]["record_id"], ev["id"])


def test_injected_items_score_and_rank_like_retrieved_ones() -> None:
    _, retriever = world()
    checked = 0
    for row in injected_rows():
        rec = row["record"]
        if rec["condition"].startswith("hop_") or not rec.get("new_ids"):
            continue
        hop = row["trace"]["hops"][rec["hop"] - 1]
        first = hop["attempts"][0] if hop["attempts"] else hop
        items = first["retrieved"]
        assert [e["rank"] for e in items] == list(range(1, len(items) + 1))
        assert items == sorted(items, key=lambda e: (-e["score"], e["id"]))
        for ev in items:
            assert ev["score"] > 0
            assert ev["score"] == pytest.approx(
                retriever.score_text(first["subquery"], ev["title"], ev["text"]), rel=1e-5)
        checked += 1
    assert checked >= 10


def test_no_injected_trace_carries_a_note_the_agent_does_not_write() -> None:
    clean_notes = {s["note"] for r in study_rows() if r["record"]["condition"] == "clean"
                   for s in r["trace"]["steps"]}
    for row in injected_rows():
        notes = {s["note"] for s in row["trace"]["steps"]}
        assert "answer: enough evidence" not in notes
        if row["record"]["condition"] == "early_termination":
            assert notes <= clean_notes


def test_records_say_how_long_the_fault_held() -> None:
    for row in study_rows():
        rec = row["record"]
        if rec["condition"] not in ("clean", "done") and not rec.get("skipped"):
            persistence = rec["params"]["persistence"]
            boundary = rec["params"].get("boundary", "retrieve")
            if rec["condition"].startswith("hop_"):  # an operator's edit: keyed to the query
                assert persistence == "query"
            else:  # a retrieval fault is a state of the corpus; the agent's own acts are not
                assert persistence == ("corpus" if boundary == "retrieve" else "query")


def test_fault_conditions_follow_each_fault_boundary() -> None:
    data, retriever = world()
    ex = data.examples[0]
    base = executor().run(ex, retriever)
    inp = _Injector(ex, base, retriever, [], PropagationConfig(),
                    fact_source(data)).fault_input(2, 5)
    assert fault_condition(get_fault("early_termination"), inp, "query").budget_cap == 1
    assert fault_condition(get_fault("query_drift"), inp, "query").drift is not None
    assert fault_condition(get_fault("stale_evidence"), inp, "query").evidence_fault


# --- the command line --------------------------------------------------------------------

def test_a_bad_persistence_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke(["propagate", "--n", "2", "--fault-persistence", "forever",
                     "--out", str(tmp_path / "run"), "--no-cache", "--no-progress"])
    assert result.exit_code == 2
    assert "--fault-persistence must be one of corpus, query, hop, once" in result.output
    assert not (tmp_path / "run").exists()


def test_summary_config_and_records_carry_the_persistence(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(["propagate", "--n", "3", "--faults", "empty_retrieval",
                     "--fault-persistence", "hop", "--no-hop-operators",
                     "--out", str(out), "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["persistence"] == summary["config"]["fault_persistence"] == "hop"
    cells = summary["faults"]["empty_retrieval"].values()
    assert all(c["recovery"] == 0.0 for c in cells if c["injected"])  # by design
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    assert {r["record"]["params"]["persistence"] for r in records
            if r["record"]["condition"] == "empty_retrieval" and r["metrics"]} == {"hop"}

"""Repairs (`cuer_agent.interventions.repairs`): the actions an agent could have taken at
one hop, which the probes try on natural failures — what each changes, and when one is
not applicable."""

from __future__ import annotations

import pytest

from cuer_agent.agents import check_spec
from cuer_agent.data import Passage
from cuer_agent.errors import ConfigError
from cuer_agent.graphs.spec import AGENT_SPEC
from cuer_agent.graphs.state import wants_retry
from cuer_agent.interventions.repairs import (
    DEEPER_FACTOR,
    RepairCondition,
    get_repair,
    repair_names,
)
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.trace import Evidence

PASSAGES = [Passage(title=f"T{i}", text=f"river town {i} lies on the river", index=0)
            for i in range(12)]


@pytest.fixture(scope="module")
def retriever() -> BM25Retriever:
    return BM25Retriever.from_passages(PASSAGES)


def test_the_built_in_repairs_are_registered_and_an_unknown_one_is_refused() -> None:
    assert repair_names() == ["deeper", "gold-support", "replan", "reread"]
    with pytest.raises(ConfigError, match="unknown repair 'wider'"):
        get_repair("wider")


def test_deeper_returns_more_of_the_same_ranked_list_at_its_hop_only(
        retriever: BM25Retriever) -> None:
    condition = get_repair("deeper").condition(2)
    assert condition is not None
    ranked = retriever.retrieve("river town", 3 * DEEPER_FACTOR)
    assert condition.retrieve(retriever, 2, "river town", 3) == list(ranked)
    assert condition.retrieve(retriever, 1, "river town", 3) == list(ranked[:3])


def test_gold_support_puts_the_passage_first_and_keeps_the_list_length(
        retriever: BM25Retriever) -> None:
    gold = Evidence(id="gold-c0", title="Gold", text="the answer", rank=1)
    condition = get_repair("gold-support").condition(1, [gold])
    assert condition is not None
    got = condition.retrieve(retriever, 1, "river town", 4)
    assert got[0] == gold and len(got) == 4
    assert got[1:] == list(retriever.retrieve("river town", 3))


def test_replan_changes_no_tool_it_reopens_the_hop_for_the_retry_planner() -> None:
    assert get_repair("replan").condition(1) is None
    state = {"hop": 2, "retries_per_hop": 0, "done": False,
             "hops": [{"hop": 1, "attempt": 1, "support": "supported", "selected": ["a"]},
                      {"hop": 2, "attempt": 1, "support": "supported", "selected": ["b"]}]}
    assert not wants_retry(state)  # type: ignore[arg-type]
    reopened = AGENT_SPEC.with_retry(state, 2)
    assert reopened is not None and wants_retry(reopened)  # type: ignore[arg-type]
    assert AGENT_SPEC.with_retry(state, 1) is None  # only the last hop read can be re-opened


@pytest.mark.parametrize(("name", "kwargs", "reason"), [
    ("deeper", {"allowed": ("replan",), "retries": True, "support": None},
     "does not allow 'deeper'"),
    ("replan", {"allowed": ("replan",), "retries": False, "support": None},
     "no retry planner"),
    ("gold-support", {"allowed": ("gold-support",), "retries": True, "support": ()},
     "no gold supporting passage"),
])
def test_a_repair_the_agent_cannot_take_says_why(name: str, kwargs: dict[str, object],
                                                 reason: str) -> None:
    why = get_repair(name).not_applicable(**kwargs)  # type: ignore[arg-type]
    assert why is not None and reason in why


def test_a_repair_the_agent_can_take_has_no_reason() -> None:
    gold = (Evidence(id="g", title="G", text="g"),)
    for name in repair_names():
        assert get_repair(name).not_applicable(allowed=repair_names(), retries=True,
                                               support=gold) is None


def test_a_spec_that_allows_an_unknown_repair_is_refused_in_one_line() -> None:
    from dataclasses import replace

    from cuer_agent.graphs import agent

    graph, spec = agent.build()
    with pytest.raises(ConfigError, match="unknown repair 'wider'"):
        check_spec(graph, replace(spec, repairs=("deeper", "wider")))


def test_a_repair_condition_is_clean_at_every_other_hop(retriever: BM25Retriever) -> None:
    condition = RepairCondition(hop=3, depth=4)
    assert condition.issue(3, 1, "q") == "q" and condition.hop_budget(5) == 5
    assert condition.repaired(1) is condition
    assert condition.retrieve(retriever, 1, "river", 2) == list(retriever.retrieve("river", 2))

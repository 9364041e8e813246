"""`examples/react_agent.py`: a tool-calling agent of another shape, forked at tool calls
through LangGraph's own checkpointer (no cuer-agent executor involved)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from cuer_agent.agent_context import AgentContext
from cuer_agent.data import Example, load_dataset
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.metrics import recall_correct
from cuer_agent.retrieval import BM25Retriever

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import react_agent

N = 10


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return load_dataset("synthetic", n=N, hops=3, seed=3).examples


@pytest.fixture(scope="module")
def context(examples: list[Example]) -> AgentContext:
    corpus = load_dataset("synthetic", n=N, hops=3, seed=3).corpus
    return AgentContext(skills=SkillClient(make_backend("extractive")),
                        retriever=BM25Retriever.from_passages(corpus))


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _bytes(state: dict[str, Any]) -> str:
    return json.dumps([m.model_dump() for m in state["messages"]], sort_keys=True, default=str)


def _run(graph: Any, example: Example, context: AgentContext, thread: str
         ) -> tuple[dict[str, Any], list[list[str]]]:
    """The run's final state, and its skill requests (cache keys) up to the end of each
    search's tool node, then all of them."""
    upto: list[list[str]] = []
    with context.skills.collect() as keys:
        for update in graph.stream(react_agent.question_input(example.question),
                                   _thread(thread), context=context, stream_mode="updates"):
            if "tools" in update:
                upto.append(list(keys))
        upto.append(list(keys))
    return graph.get_state(_thread(thread)).values, upto


def _after_search(graph: Any, thread: str, hop: int) -> Any:
    """The checkpoint right after the tool node returned hop `hop`'s search."""
    for snap in graph.get_state_history(_thread(thread)):
        tools = [m for m in snap.values.get("messages", []) if isinstance(m, ToolMessage)]
        if snap.next == ("llm",) and len(tools) == hop:
            return snap
    raise AssertionError(f"no checkpoint after search {hop}")


def test_the_react_agent_answers_offline(examples: list[Example],
                                         context: AgentContext) -> None:
    graph, _ = react_agent.build()
    correct = 0
    for i, ex in enumerate(examples):
        state, _ = _run(graph, ex, context, f"answer-{i}")
        trace = react_agent.trace_of(state, ex.id)
        assert 1 <= len(trace.hops) <= react_agent.HOP_BUDGET
        assert trace.steps[-1].action == "ANSWER"
        correct += bool(recall_correct(trace.answer, ex.gold_answers))
    assert correct > 0  # the extractive skills do answer some synthetic chain questions


def test_identity_forks_reproduce_the_run_byte_for_byte(examples: list[Example],
                                                         context: AgentContext) -> None:
    graph, _ = react_agent.build()
    for i, ex in enumerate(examples[:5]):
        base, _ = _run(graph, ex, context, f"base-{i}")
        for hop in range(1, len(react_agent.searches(base["messages"])) + 1):
            snap = _after_search(graph, f"base-{i}", hop)
            same = snap.values["messages"][-1]
            forked = graph.update_state(snap.config, {"messages": [same]}, as_node="tools")
            out = graph.invoke(None, forked, context=context)
            assert _bytes(out) == _bytes(base), (ex.id, hop)


def test_a_fault_at_hop_2_reexecutes_only_the_suffix(examples: list[Example],
                                                      context: AgentContext) -> None:
    graph, _ = react_agent.build()
    forked_any = False
    for i, ex in enumerate(examples):
        base, upto = _run(graph, ex, context, f"fault-{i}")
        if len(react_agent.searches(base["messages"])) < 2:
            continue
        snap = _after_search(graph, f"fault-{i}", 2)
        hit = snap.values["messages"][-1]
        empty = ToolMessage(content="(no results)", name="search", id=hit.id,
                            tool_call_id=hit.tool_call_id,
                            artifact={"query": hit.artifact["query"], "evidence": []})
        prefix, everything = upto[1], upto[-1]  # requests up to hop 2's search; all
        with context.skills.collect() as faulted:
            out = graph.invoke(None, graph.update_state(snap.config, {"messages": [empty]},
                                                        as_node="tools"), context=context)
        with context.skills.collect() as identity:
            same = graph.invoke(None, graph.update_state(snap.config, {"messages": [hit]},
                                                         as_node="tools"), context=context)
        assert react_agent.searches(out["messages"])[0] == react_agent.searches(
            base["messages"])[0]  # hop 1 as it was
        assert react_agent.searches(out["messages"])[1]["evidence"] == []
        # 0 prefix calls: the identity fork asks exactly the base run's later requests,
        # and the faulted suffix none of the requests made before the fault
        assert list(identity) == everything[len(prefix):] and _bytes(same) == _bytes(base)
        assert faulted and not set(faulted) & set(prefix)
        forked_any = True
    assert forked_any


def test_the_fault_condition_wraps_the_react_agents_retriever(examples: list[Example],
                                                              context: AgentContext) -> None:
    """A query-keyed condition in the run context (as the propagation study injects it)
    changes what the tool node returns at its hop, without touching the graph."""
    from cuer_agent.interventions.persistence import edit_condition

    graph, _ = react_agent.build()
    ex = examples[0]
    base, _ = _run(graph, ex, context, "cond-base")
    first = react_agent.searches(base["messages"])[0]
    faulted = AgentContext(skills=context.skills, retriever=context.retriever,
                           condition=edit_condition(1, first["subquery"], []))
    out = graph.invoke(react_agent.question_input(ex.question), _thread("cond-fault"),
                       context=faulted)
    assert react_agent.searches(out["messages"])[0]["evidence"] == []


def test_given_its_own_chat_model_the_react_agent_does_not_allow_reread() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    _, own = react_agent.build()
    _, given = react_agent.build(FakeListChatModel(responses=["done"]))
    assert "reread" in own.repairs  # its skills' reader offers the next reading
    assert "reread" not in given.repairs and "deeper" in given.repairs

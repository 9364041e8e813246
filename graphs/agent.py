"""The multi-hop retrieve-select-verify agent under test.

    START → plan ─┬─► retrieve → read ─┬─► plan   (another hop)
                  └─► answer → END      └─► answer (done, or hop budget spent)

`plan` may decide to answer; `read`'s router sends the agent to `answer` when the hop
budget is spent or a fork forced a stop (`done`). Forks resume this same compiled graph
after editing a snapshot (see `cuer_agent.execution`), so LangGraph's own edges pick the
successors of an edited state.
"""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from cuer_agent.graphs import nodes
from cuer_agent.graphs.state import AgentContext, AgentState


def after_plan(state: AgentState) -> str:
    return "answer" if state["done"] else "retrieve"


def after_read(state: AgentState) -> str:
    return "answer" if state["done"] or state["hop"] >= state["hop_budget"] else "plan"


def build_agent_graph() -> CompiledStateGraph:
    builder = StateGraph(AgentState, context_schema=AgentContext)
    builder.add_node("plan", nodes.plan)
    builder.add_node("retrieve", nodes.retrieve)
    builder.add_node("read", nodes.read)
    builder.add_node("answer", nodes.answer)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", after_plan, ["retrieve", "answer"])
    builder.add_edge("retrieve", "read")
    builder.add_conditional_edges("read", after_read, ["plan", "answer"])
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=InMemorySaver())


graph = build_agent_graph()
"""Module-level graph for `langgraph dev` (see langgraph.json)."""

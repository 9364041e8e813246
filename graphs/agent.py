"""The multi-hop retrieve-select-verify agent under test.

    START → plan ─┬─► retrieve → read ─┬─► plan   (retry the hop, or the next hop)
                  └─► answer → END      └─► answer (a fork forced a stop: `done`)

VERIFY has consequences: after `read`, a hop whose last attempt is unsupported (or
selected nothing) goes back to `plan` for a reformulated sub-query of the *same* hop,
within `retries_per_hop` (a budget separate from the hop budget). `plan` also decides
to answer — on its planner's word, or when the hop budget is spent. Forks resume this
same compiled graph after editing a snapshot (see `cuer_agent.execution`), so
LangGraph's own edges pick the successors of an edited state.
"""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from cuer_agent.agent_context import AgentContext

from . import nodes
from .spec import AGENT_SPEC, OurAgentSpec
from .state import AgentState, InProcessSerializer

Graph = CompiledStateGraph[AgentState, AgentContext, AgentState, AgentState]


def after_plan(state: AgentState) -> str:
    return "answer" if state["done"] else "retrieve"


def after_read(state: AgentState) -> str:
    # `plan` decides between a retry, the next hop and answering (budget included), so
    # the decision lives in one place.
    return "answer" if state["done"] else "plan"


def build_agent_graph() -> Graph:
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
    return builder.compile(checkpointer=InMemorySaver(serde=InProcessSerializer()))



def build() -> tuple[Graph, OurAgentSpec]:
    """The agent and its `AgentSpec` (``--agent cuer_agent.graphs.agent:build`` is the
    default agent)."""
    return build_agent_graph(), AGENT_SPEC

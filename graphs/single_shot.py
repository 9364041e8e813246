"""The single-shot CUE-R system: retrieve(question, k) → answer.

Its trace is the degenerate case RETRIEVE → SELECT → ANSWER with one hop. Evidence
interventions fork it after `retrieve`, exactly as they fork the agent.
"""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from cuer_agent.agent_context import AgentContext

from . import nodes
from .spec import SINGLE_SHOT_SPEC, OurAgentSpec
from .state import AgentState, InProcessSerializer

Graph = CompiledStateGraph[AgentState, AgentContext, AgentState, AgentState]


def build_single_shot_graph() -> Graph:
    builder = StateGraph(AgentState, context_schema=AgentContext)
    builder.add_node("retrieve", nodes.retrieve_question)
    builder.add_node("answer", nodes.answer_from_context)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=InMemorySaver(serde=InProcessSerializer()))



def build() -> tuple[Graph, OurAgentSpec]:
    """The single-shot system and its `AgentSpec`."""
    return build_single_shot_graph(), SINGLE_SHOT_SPEC

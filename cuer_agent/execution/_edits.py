"""A fork's edits (`Edit`): each returns a new state through the spec's writers, so the
trace shows the edited step as the agent's own."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cuer_agent.agent_context import to_state
from cuer_agent.agents import AgentSpec, State
from cuer_agent.trace import Evidence

Edit = Callable[[AgentSpec, State], State]
"""A fork's edit: the boundary's state in, the state to resume from out."""


def replace_evidence(evidence: Sequence[Evidence]) -> Edit:
    """After-retrieve edit: the hop sees `evidence` instead of what was retrieved (the
    spec gets it as state, `to_state`)."""
    return lambda spec, state: spec.with_evidence(state, to_state(evidence))


def replace_subquery(subquery: str) -> Edit:
    """After-plan edit: the hop searches with `subquery`."""
    return lambda spec, state: spec.with_subquery(state, subquery)


def force_answer(hops_taken: int) -> Edit:
    """After-read edit: no hop after this one — the budget becomes the hops taken, so the
    agent answers as in a run that spent its budget."""
    return lambda spec, state: spec.with_budget(state, hops_taken)


def identity(spec: AgentSpec, state: State) -> State:
    return state


def without_retries(spec: AgentSpec, state: State) -> State:
    """The same agent, never retrying a hop (the study's control)."""
    return spec.with_retries(state, 0)


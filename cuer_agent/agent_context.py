"""What an agent's nodes read besides their state: the run-scoped context.

The context carries what is not state: the skills, the retriever, and — only when an
experimenter injects a fault — the `Condition` in force. A condition is how a fault
becomes a property of the run's tools rather than an edit of a saved state: the nodes
ask it for the sub-query actually issued and for the evidence actually returned, so a
retry, a regenerated suffix or a probe meets the same fault the run met
(`cuer_agent.interventions.persistence`). The agent's skills never see it.

It stands below both the agents (`cuer_agent.graphs`, a user's `--agent`) and the
description of an agent the study reads (`cuer_agent.agents`), which makes the default
context of every agent from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, cast

from cuer_agent.llm.backends import SkillClient
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Evidence, EvidenceData

__all__ = ["AgentContext", "Condition", "to_state"]


def to_state(evidence: Iterable[Evidence]) -> list[EvidenceData]:
    """Evidence as the state holds it: the one place a model becomes JSON-native state
    (the retrieve node's tools, a fork's edit). `model_dump(mode="json")` keeps the field
    order and every field, so the bytes are those of a live retrieval."""
    return [cast(EvidenceData, ev.model_dump(mode="json")) for ev in evidence]


class Condition(Protocol):
    """A fault in force during a run: consulted by the nodes where a deployed system's
    tools would misbehave. Implemented by `cuer_agent.interventions.FaultCondition`."""

    def issue(self, hop: int, attempt: int, planned: str) -> str:
        """The sub-query actually issued when the planner planned `planned`."""
        ...

    def retrieve(self, retriever: Retriever, hop: int, query: str,
                 k: int) -> list[Evidence]:
        """The evidence actually returned for `query` at `hop`."""
        ...

    def hop_budget(self, budget: int) -> int:
        """The hop budget a run has under the fault (a forced early stop lowers it)."""
        ...

    def reading(self, hop: int) -> int:
        """Which reading of its evidence the reader gives at `hop` (`ReadRequest.reading`):
        0, its own, everywhere but at a hop the `reread` repair re-reads."""
        ...

    def repaired(self, hop: int) -> Condition:
        """The same fault with hop `hop` repaired: clean there, in force elsewhere."""
        ...


@dataclass(frozen=True)
class AgentContext:
    """What nodes need besides state: not serialised, supplied per invocation."""

    skills: SkillClient
    retriever: Retriever
    condition: Condition | None = None
    """The fault in force, if an experimenter injected one; None for a clean run."""

    def issue(self, hop: int, attempt: int, planned: str) -> str:
        return planned if self.condition is None else self.condition.issue(hop, attempt, planned)

    def retrieve(self, hop: int, query: str, k: int) -> list[EvidenceData]:
        """The evidence the tool returns for `query` at `hop`, as state (under the fault
        in force, if any). A user's agent gets the same JSON-native items."""
        if self.condition is not None:
            return to_state(self.condition.retrieve(self.retriever, hop, query, k))
        return to_state(self.retriever.retrieve(query, k))

    def reading(self, hop: int) -> int:
        """Which reading the read node asks for at `hop` (`ReadRequest.reading`): 0 but at
        the hop a `reread` repair re-reads. An agent that allows `reread` passes it on."""
        return 0 if self.condition is None else self.condition.reading(hop)

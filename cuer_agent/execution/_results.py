"""What an execution is run with and what it gives back: the system's settings
(`AgentConfig`, `Mode`), one invocation's result (`RunResult`) and what its skill
requests took (`Spent`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from typing_extensions import TypedDict  # typing's has no pydantic schema on 3.11

from cuer_agent.agent_context import Condition
from cuer_agent.agents import State
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Cost, Trace

Mode = Literal["agentic", "single_shot"]


@dataclass(frozen=True)
class AgentConfig:
    """The system under test: our agent or the single-shot system (`mode`) unless
    `Executor` is given an agent, hop budget, evidence per hop, retries per hop."""

    mode: Mode = "agentic"
    hop_budget: int = 3
    k: int = 5
    retries_per_hop: int = 1
    """Retries of a hop VERIFY found unsupported (separate from the hop budget)."""

    def __post_init__(self) -> None:
        from cuer_agent.errors import ConfigError
        if self.hop_budget < 1:
            raise ConfigError(f"hop budget must be >= 1, got {self.hop_budget}")
        if self.retries_per_hop < 0:
            raise ConfigError(f"retries per hop must be >= 0, got {self.retries_per_hop}")


class Spent(TypedDict):
    """What one invocation's skill requests took (a trace row's `spent`)."""

    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    parse_failures: int
    retries: int
    by_skill: dict[str, dict[str, int]]
    """Skill → `SPENT_BY_SKILL` counters (`RequestLog.spent_by_skill`)."""


def nothing_spent() -> Spent:
    """An invocation that made no skill request."""
    return {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "parse_failures": 0,
            "retries": 0, "by_skill": {}}


@dataclass
class RunResult:
    """One execution: its trace, the per-node snapshots, and what ran."""

    example_id: str
    trace: Trace
    snapshots: dict[str, State]
    nodes_run: list[str]
    """Node executions of this invocation as step keys ("2:read"), in order (a fork
    lists only its suffix)."""
    retriever: Retriever = field(repr=False)
    condition: Condition | None = field(default=None, repr=False)
    """The fault in force during this execution (None: a clean run)."""
    request_keys: list[str] = field(default_factory=list, repr=False)
    """Cache keys of the skill requests this invocation made (16 hex digits each)."""
    spent: Spent = field(default_factory=lambda: nothing_spent())
    """Skill calls and tokens of this invocation only (a fork's trace cost also counts
    the prefix it inherited; this does not)."""
    final_state: State = field(default_factory=dict, repr=False)
    question: str = ""
    cost_at: dict[str, Cost] = field(default_factory=dict, repr=False)
    """Skill cost of the run up to each snapshot (prefix included)."""

    @property
    def nodes(self) -> list[str]:
        """Roles of `nodes_run`, without hops (our agent: its node names)."""
        return [key.split(":", 1)[1] for key in self.nodes_run]

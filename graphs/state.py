"""The state both graphs share, and the run-scoped context their nodes read.

State is JSON-native (dicts, lists, str, numbers, bools): a checkpoint round-trip and a
fork must give back exactly what a live run has. Nodes return new lists and dicts and
never mutate what they were given, so a fork can never change its prefix.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from cuer_agent.llm.backends import SkillClient
from cuer_agent.retrieval import Retriever


class AgentState(TypedDict, total=False):
    example_id: str
    """Id of the question being answered (observable: it names the task, not its answer)."""
    question: str
    """The user question."""
    hop_budget: int
    """Most retrieve-read hops the agent may take."""
    k: int
    """Evidence items retrieved per hop."""
    hop: int
    """Number of the current (or last finished) hop; 0 before the first plan."""
    subquery: str
    """Scratch: the current hop's sub-query, set by `plan`."""
    retrieved: list[dict[str, Any]]
    """Scratch: the current hop's evidence (`Evidence` dicts), set by `retrieve`."""
    hops: list[dict[str, Any]]
    """Finished hops as `HopRecord` dicts. A plain field: nodes rewrite it whole."""
    done: bool
    """True once the agent decided to answer (or a fork forced it to)."""
    final: dict[str, Any]
    """The `AnswerResponse` dict once `answer` ran; {} before."""
    cost: dict[str, int]
    """Skill calls and tokens spent so far (cache hits included: a trace's cost does not
    depend on the cache)."""
    parse_failures: int
    """Skill replies that stayed invalid after the repair turn."""
    trace: Annotated[list[dict[str, Any]], operator.add]
    """Observable steps (`Step` dicts), append-only via the reducer."""


@dataclass(frozen=True)
class AgentContext:
    """What nodes need besides state: not serialised, supplied per invocation."""

    skills: SkillClient
    retriever: Retriever


def initial_state(example_id: str, question: str, *, hop_budget: int, k: int) -> AgentState:
    return AgentState(example_id=example_id, question=question, hop_budget=hop_budget, k=k,
                      hop=0, subquery="", retrieved=[], hops=[], done=False, final={},
                      cost={"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
                      parse_failures=0, trace=[])

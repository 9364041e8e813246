"""The state both graphs share.

State is JSON-native (dicts, lists, str, numbers, bools): a checkpoint round-trip and a
fork must give back exactly what a live run has. Its values are the JSON forms of the
trace models (`cuer_agent.trace.EvidenceData`, `HopData`, `StepData`, `AnswerData`);
`to_state` and `hop_to_state` are where a model becomes state, `hop_from_state` where
state becomes a model again (a whole trace: `cuer_agent.trace.build_trace`). Nodes
return new lists and dicts and never mutate what they were given, so a fork can never
change its prefix.

What the nodes read besides state (`AgentContext`: skills, retriever, the fault in
force) is in `cuer_agent.agent_context`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, cast

from typing_extensions import TypedDict  # typing's TypedDict has no JSON schema on 3.11

from cuer_agent.trace import (
    AnswerData,
    CostData,
    EvidenceData,
    HopData,
    HopRecord,
    StepData,
    attempt_failed,
)


class AgentState(TypedDict, total=False):
    example_id: str
    """Id of the question being answered (observable: it names the task, not its answer)."""
    question: str
    """The user question."""
    hop_budget: int
    """Most retrieve-read hops the agent may take (retries of a hop do not count)."""
    retries_per_hop: int
    """Retries the agent may take at one hop when VERIFY finds it unsupported or nothing
    was selected: a budget of its own, separate from the hop budget."""
    k: int
    """Evidence items retrieved per hop."""
    hop: int
    """Number of the current (or last finished) hop; 0 before the first plan."""
    attempt: int
    """Attempt of the current hop: 1, then 2, … for each retry; set by `plan`."""
    subquery: str
    """Scratch: the current attempt's sub-query, set by `plan`."""
    retrieved: list[EvidenceData]
    """Scratch: the current attempt's evidence, set by `retrieve`."""
    hops: list[HopData]
    """Finished hops as JSON `HopRecord`s (each the hop's last attempt, earlier attempts
    nested in `attempts`). A plain field: nodes rewrite it whole."""
    done: bool
    """True once the agent decided to answer (or a fork forced it to)."""
    final: AnswerData
    """The answer's observable fields once `answer` ran; {} before."""
    cost: CostData
    """Skill calls and tokens spent so far (cache hits included: a trace's cost does not
    depend on the cache)."""
    parse_failures: int
    """Skill replies that stayed invalid after the repair turn."""
    trace: Annotated[list[StepData], operator.add]
    """Observable steps, append-only via the reducer."""


def hop_to_state(record: HopRecord) -> HopData:
    """A hop record as the state holds it (a frozen re-answer's replaced hop): every
    field, in the order the `read` node writes them."""
    return cast(HopData, record.model_dump(mode="json"))


def hop_from_state(data: HopData) -> HopRecord:
    """A hop of the state (ours or a user's agent's, `AgentSpec.hops`) as the model."""
    return HopRecord.model_validate(data)


def wants_retry(state: AgentState) -> bool:
    """Does the agent retry its current hop? Yes when the hop's last attempt failed
    VERIFY (unsupported, or nothing selected) and its retry budget is not spent. The
    router and `plan` both ask this, so they cannot disagree."""
    hops = state.get("hops") or []
    if not hops or hops[-1]["hop"] != state.get("hop"):
        return False
    last = hops[-1]
    failed = attempt_failed(last.get("support", "unknown"), last.get("selected") or ())
    return failed and int(last.get("attempt", 1)) <= int(state.get("retries_per_hop", 0))


def initial_state(example_id: str, question: str, *, hop_budget: int, k: int,
                  retries_per_hop: int) -> AgentState:
    return AgentState(example_id=example_id, question=question, hop_budget=hop_budget,
                      retries_per_hop=retries_per_hop, k=k, hop=0, attempt=0, subquery="",
                      retrieved=[], hops=[], done=False, final={},
                      cost={"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
                      parse_failures=0, trace=[])


class InProcessSerializer:
    """A checkpoint serializer that stores values as they are, for a checkpointer that
    lives in this process only (`InMemorySaver`). The executor seeds every fork's thread
    from its own copy of a snapshot and deletes the thread afterwards, so a checkpoint is
    never read by another process or after the run; since nodes never change a value in
    place, storing it without an encode-decode round trip (LangGraph's default) returns
    exactly what was stored, for a fraction of the CPU."""

    def dumps_typed(self, obj: Any) -> tuple[str, Any]:
        return ("in-process", obj)

    def loads_typed(self, data: tuple[str, Any]) -> Any:
        return data[1]


"""Our two systems described as `AgentSpec`s: the executor runs them exactly as it runs a
user's graph (`cuer_agent.agents`).

Both keep an observable step log in the state (`trace`) and count their own skill calls
(`cost`, `parse_failures`), so their traces are read from the state as it is, and a
fork's trace carries the cost of the prefix it inherited. Step keys are the node names
(each node plays one role), with the hop and attempt of the step the node appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from cuer_agent.agents import AgentSpec, Boundary, Role, State, hop_of_key
from cuer_agent.trace import (
    Action,
    AnswerData,
    Cost,
    EvidenceData,
    HopData,
    Trace,
    TraceState,
    build_trace,
)

from .state import AgentState, initial_state, wants_retry

_KEYS = ("example_id", "question", "hop", "subquery", "retrieved", "hops", "done", "final",
         "cost", "parse_failures", "trace")


@dataclass(frozen=True)
class OurAgentSpec(AgentSpec):
    """`agent.py` (mode "agentic") or `single_shot.py` ("single_shot"), beside this file."""

    name: str = "cuer-agent"
    roles: Mapping[str, tuple[Role, ...]] = field(default_factory=lambda: {
        "plan": ("plan",), "retrieve": ("retrieve",), "read": ("read",),
        "answer": ("answer",)})
    boundaries: Mapping[Boundary, tuple[Role, str]] = field(default_factory=lambda: {
        "plan": ("plan", "plan"), "retrieve": ("retrieve", "retrieve"),
        "read": ("read", "read"), "answer": ("read", "read")})
    keys: tuple[str, ...] = _KEYS
    retries_key: str | None = "retries_per_hop"
    shares_state: bool = True
    """Our nodes return new values and never edit what they read (`state.py`);
    tests/test_execution_reuse.py checks that no snapshot changes after it was taken."""

    def input(self, example_id: str, question: str, *, hop_budget: int, k: int,
              retries_per_hop: int) -> State:
        return dict(initial_state(example_id, question, hop_budget=hop_budget, k=k,
                                  retries_per_hop=retries_per_hop))

    def step_key(self, state: State, node: str) -> str:
        """The hop and attempt are those of the step the node just appended — a plan that
        decides to answer belongs to the hop it declined, not to the last hop."""
        if node == "answer":
            return "final:answer"
        last = (state.get("trace") or [{}])[-1]
        attempt = int(last.get("attempt", 1))
        hop = last.get("hop", 0)
        return f"{hop}:{node}" if attempt == 1 else f"{hop}.{attempt}:{node}"

    def hops(self, state: State) -> list[HopData]:
        return list(state.get("hops", []))

    def answer(self, state: State) -> AnswerData:
        return cast(AnswerData, dict(state.get("final") or {}))

    def hop_done(self, key: str, state: State, hop: int) -> bool:
        # a read VERIFY failed is followed by a retry of the same hop
        return (key.endswith(":read") and hop_of_key(key) == hop
                and not wants_retry(cast(AgentState, state)))

    def with_retry(self, state: State, hop: int) -> State | None:
        """Hop `hop`'s last attempt marked unsupported (VERIFY failed) and the retry budget
        raised to its attempt count, so `wants_retry` holds and `plan` asks the retry
        planner, which is shown the attempts so far."""
        hops = list(state.get("hops") or [])
        if not hops or hops[-1]["hop"] != hop or state.get("hop") != hop:
            return None
        last = hops[-1]
        hops[-1] = {**last, "support": "unsupported"}
        retries = max(int(state.get("retries_per_hop", 0)), int(last.get("attempt", 1)))
        return {**state, "hops": hops, "retries_per_hop": retries, "done": False}

    def trace(self, state: State, *, example_id: str, question: str, meta: Mapping[str, object],
              cost: Cost, error: str = "") -> Trace:
        return build_trace(cast(TraceState, state), self.mode, meta, error=error)

    def with_evidence(self, state: State, evidence: list[EvidenceData]) -> State:
        """The RETRIEVE step shows the edited evidence too: the trace must not reveal
        that an intervention happened."""
        trace = list(state["trace"])
        last = trace[-1]
        assert last["action"] == Action.RETRIEVE.value, "with_evidence cuts after retrieve"
        ids = [ev["id"] for ev in evidence]
        trace[-1] = {**last, "state": {**last["state"], "in_view": ids}}
        return {**state, "retrieved": evidence, "trace": trace}

    def with_subquery(self, state: State, subquery: str) -> State:
        trace = list(state["trace"])
        last = trace[-1]
        assert last["action"] == Action.PLAN.value, "with_subquery cuts after plan"
        trace[-1] = {**last, "state": {**last["state"], "query": subquery}}
        return {**state, "subquery": subquery, "trace": trace}

    def with_hops(self, state: State,
                  overrides: Mapping[int, list[EvidenceData] | HopData]) -> State:
        hops = []
        for rec in state["hops"]:
            new = overrides.get(rec["hop"])
            if isinstance(new, list):
                rec = {**rec, "retrieved": new, "selected": [ev["id"] for ev in new]}
            elif isinstance(new, dict):
                rec = new
            hops.append(rec)
        return {**state, "hops": hops, "done": True}  # `read` then routes to `answer`


AGENT_SPEC = OurAgentSpec()
SINGLE_SHOT_SPEC = OurAgentSpec(
    name="single-shot", mode="single_shot", retries_key=None,
    roles={"retrieve": ("retrieve",), "answer": ("answer",)},
    boundaries={"retrieve": ("retrieve", "retrieve")})

"""Run a system on an example; fork a run at hop h and let the same agent re-execute the suffix.

Semantics (tested in tests/test_execution.py):

* **run** streams the compiled graph and keeps a JSON-native *snapshot* of the state
  after every node, keyed ``"<hop>:<node>"`` (hop = the state's hop after the node).
* **fork(base, hop, boundary, edit)** copies the snapshot at a boundary of hop *h*,
  applies `edit`, seeds a fresh thread with it via ``update_state(..., as_node=<node>)``
  and resumes with ``invoke(None)``: LangGraph's own edges choose what runs next, and
  nothing before the boundary runs again (no skill call is spent on the prefix).
  Boundaries: ``"plan"`` (after hop h's plan: sub-query edits), ``"retrieve"`` (after
  hop h's retrieval: evidence edits), ``"read"`` (after hop h's read — with
  ``done=True`` a forced answer; early termination at hop h forks at ``read`` of hop
  h−1, and at hop 1 from the initial state).
* **reanswer(base, overrides)** (frozen): replace some hops' evidence, keep every other
  hop as observed, run only ``answer``.
* **repair_and_regenerate(run, j)**: re-execute hop j cleanly (its sub-query as planned,
  fresh retrieval), keep hops < j as observed, let the agent continue.

Edits rewrite the observable trace tail consistently (an edited retrieval shows in the
RETRIEVE step), because the trace must not reveal that an intervention happened.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.graph.state import CompiledStateGraph

from cuer_agent.data import Example
from cuer_agent.graphs.agent import build_agent_graph
from cuer_agent.graphs.nodes import step
from cuer_agent.graphs.single_shot import build_single_shot_graph
from cuer_agent.graphs.state import AgentContext, AgentState, initial_state
from cuer_agent.llm.backends import BackendError, SkillClient
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Action, Cost, HopRecord, Step, Trace

Boundary = Literal["plan", "retrieve", "read"]
Mode = Literal["agentic", "single_shot"]
Edit = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class AgentConfig:
    """The system under test: mode, hop budget, evidence per hop."""

    mode: Mode = "agentic"
    hop_budget: int = 3
    k: int = 5

    def __post_init__(self) -> None:
        if self.hop_budget < 1:
            from cuer_agent.errors import ConfigError
            raise ConfigError(f"hop budget must be >= 1, got {self.hop_budget}")


@dataclass
class RunResult:
    """One execution: its trace, the per-node snapshots, and what ran."""

    example_id: str
    trace: Trace
    snapshots: dict[str, dict[str, Any]]
    nodes_run: list[str]
    """Node executions of this invocation as snapshot keys ("2:read"), in order (a fork
    lists only its suffix)."""
    retriever: Retriever = field(repr=False)
    request_keys: list[str] = field(default_factory=list, repr=False)
    """Cache keys of the skill requests this invocation made (16 hex digits each)."""
    spent: dict[str, int] = field(default_factory=dict)
    """Skill calls and tokens of this invocation only (a fork's trace cost also counts
    the prefix it inherited; this does not)."""
    final_state: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def nodes(self) -> list[str]:
        """Node names of `nodes_run`, without hops."""
        return [key.split(":", 1)[1] for key in self.nodes_run]


class Executor:
    """Runs one system configuration; the graph is compiled once and reused."""

    def __init__(self, skills: SkillClient, config: AgentConfig | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.skills = skills
        self.config = config or AgentConfig()
        self.graph: CompiledStateGraph = (build_agent_graph() if self.config.mode == "agentic"
                                          else build_single_shot_graph())
        self.meta = {"mode": self.config.mode, "hop_budget": self.config.hop_budget,
                     "k": self.config.k, **(meta or {})}

    # Pickled as its recipe; a worker process compiles its own graph (the checkpointer
    # holds live threads' state and is not shared).
    def __getstate__(self) -> dict[str, Any]:
        return {"skills": self.skills, "config": self.config, "meta": self.meta}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- running ----------------------------------------------------------------------------
    def run(self, example: Example, retriever: Retriever) -> RunResult:
        state = initial_state(example.id, example.question, hop_budget=self.config.hop_budget,
                              k=self.config.k)
        return self._execute(example.id, retriever, state, as_node=None)

    def fork(self, base: RunResult, hop: int, boundary: Boundary, edit: Edit) -> RunResult:
        """Edit the state at a boundary of hop `hop` and re-execute the suffix."""
        snapshot = self.snapshot(base, hop, boundary)
        edited = edit(snapshot)
        result = self._execute(base.example_id, base.retriever, edited, as_node=boundary)
        result.snapshots = {**_prefix(base.snapshots, hop, boundary),
                            _key(hop, boundary): edited, **result.snapshots}
        return result

    def snapshot(self, base: RunResult, hop: int, boundary: Boundary) -> dict[str, Any]:
        """A deep copy of the state after `boundary` of hop `hop` (hop 0: the initial state)."""
        key = _key(hop, boundary)
        if key not in base.snapshots:
            raise KeyError(f"run {base.example_id} has no state after {boundary} of hop {hop}")
        return _copy_state(base.snapshots[key])

    def reanswer(self, base: RunResult,
                 overrides: dict[int, list[dict[str, Any]] | dict[str, Any]]) -> RunResult:
        """Frozen re-answer: replace hop h by `overrides[h]` — an evidence list (all of it
        selected, the finding kept) or a whole hop record — keep every other hop as
        observed, and run only `answer`."""
        last = len(base.final_state.get("hops", []))
        state = self.snapshot(base, last, "read")
        hops = []
        for rec in state["hops"]:
            new = overrides.get(rec["hop"])
            if isinstance(new, list):
                rec = {**rec, "retrieved": new, "selected": [ev["id"] for ev in new]}
            elif isinstance(new, dict):
                rec = new
            hops.append(rec)
        state = {**state, "hops": hops, "done": True}
        return self._execute(base.example_id, base.retriever, state, as_node="read")

    def rerun_hop(self, run: RunResult, j: int) -> dict[str, Any] | None:
        """Hop j re-executed cleanly: from the observed state after hop j−1 the agent plans,
        retrieves and reads hop j again, and stops there. None if it chose to answer."""
        state = _resume(self.snapshot(run, j - 1, "read"))
        result = self._execute(run.example_id, run.retriever, state, as_node="read",
                               stop_after=f"{j}:read")
        hops = result.final_state.get("hops", [])
        return hops[j - 1] if len(hops) >= j else None

    def repair_and_regenerate(self, run: RunResult, j: int) -> RunResult:
        """Keep hops < j as observed; the agent re-plans hop j and continues on its own."""
        return self.fork(run, j - 1, "read", _resume)

    def continue_retrieving(self, run: RunResult) -> RunResult:
        """One more hop than the observed run took: the agent may search again (hop n+1)."""
        n = len(run.trace.hops)
        return self.fork(run, n, "read",
                         lambda s: {**s, "done": False, "hop_budget": max(s["hop_budget"], n + 1)})

    # -- mechanics ----------------------------------------------------------------------------
    def _execute(self, example_id: str, retriever: Retriever, state: dict[str, Any],
                 as_node: str | None, stop_after: str | None = None) -> RunResult:
        context = AgentContext(skills=self.skills, retriever=retriever)
        # A fresh thread per execution: forks never share checkpoints (safe in parallel).
        thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
        limit = {"recursion_limit": 4 * self.config.hop_budget + 8}
        snapshots: dict[str, dict[str, Any]] = {}
        nodes_run: list[str] = []
        current: dict[str, Any] = _copy_state(state)
        if as_node is None:
            snapshots["0:start"] = _copy_state(state)
            stream_input: Any = state
        else:
            self.graph.update_state(thread, state, as_node=as_node)
            stream_input = None
        error = ""
        collecting = self.skills.collect()
        collected = collecting.__enter__()
        try:
            last_node = None
            for mode, chunk in self.graph.stream(stream_input, {**thread, **limit},
                                                 context=context,
                                                 stream_mode=["updates", "values"],
                                                 # forks start from our own snapshots,
                                                 # so per-step checkpoints are waste
                                                 durability="exit"):
                if mode == "updates":
                    last_node = next(iter(chunk))
                elif last_node is not None:
                    current = _copy_state(chunk)
                    key = _snapshot_key(current, last_node)
                    snapshots[key] = current
                    nodes_run.append(key)
                    if key == stop_after:
                        break
        except BackendError as exc:
            error = str(exc)
        finally:
            collecting.__exit__(None, None, None)
            self.graph.checkpointer.delete_thread(thread["configurable"]["thread_id"])
        trace = build_trace(current, self.config.mode, self.meta, error=error)
        keys = [k[:16] for k in collected]
        before, after = state.get("cost", {}), current.get("cost", {})
        spent = {name: after.get(name, 0) - before.get(name, 0) for name in after}
        spent["parse_failures"] = (current.get("parse_failures", 0)
                                   - state.get("parse_failures", 0))
        spent["retries"] = collected.retries
        return RunResult(example_id, trace, snapshots, nodes_run, retriever, keys, spent,
                         current)


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a (plain-data) state: a pickle round trip is ~6x faster than
    `copy.deepcopy`, which matters at one copy per node per execution."""
    return pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))  # type: ignore[no-any-return]


def _snapshot_key(state: dict[str, Any], node: str) -> str:
    """"<hop>:<node>", the hop being that of the step the node just appended — a plan that
    decides to answer belongs to the hop it declined, not to the last hop."""
    if node == "answer":
        return "final:answer"
    trace = state.get("trace") or [{}]
    return f"{trace[-1].get('hop', 0)}:{node}"


def _key(hop: int, node: str) -> str:
    # The initial state doubles as "after read of hop 0", so early termination at hop 1
    # forks like any other hop.
    return "0:start" if (hop, node) == (0, "read") else f"{hop}:{node}"


def _prefix(snapshots: dict[str, dict[str, Any]], hop: int,
            boundary: str) -> dict[str, dict[str, Any]]:
    """The snapshots taken before the boundary (insertion order is execution order)."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in snapshots.items():
        if key == _key(hop, boundary):
            break
        out[key] = value
    return out


def _resume(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "done": False}


def build_trace(state: dict[str, Any], mode: Mode, meta: dict[str, Any], *,
                error: str = "") -> Trace:
    """The observable trace of a (possibly partial) final state."""
    final = state.get("final") or {}
    if error:
        status = "error"
    elif state.get("parse_failures"):
        status = "parse_failure"
    else:
        status = "ok"
    return Trace(
        example_id=state["example_id"], question=state["question"], mode=mode,
        steps=tuple(Step.model_validate(s) for s in state.get("trace", [])),
        hops=tuple(HopRecord.model_validate(h) for h in state.get("hops", [])),
        answer=final.get("answer", ""), confidence=final.get("confidence"),
        used_ids=tuple(final.get("used_ids", [])), rationale=final.get("rationale", ""),
        cost=Cost(**state.get("cost", {})), status=status, error=error, meta=meta,
    )


# --- edits: each returns a new state, with the trace tail rewritten consistently -----------

def replace_evidence(evidence: list[dict[str, Any]]) -> Edit:
    """After-retrieve edit: the hop sees `evidence` instead of what was retrieved."""
    def edit(state: dict[str, Any]) -> dict[str, Any]:
        trace = list(state["trace"])
        last = trace[-1]
        assert last["action"] == Action.RETRIEVE.value, "replace_evidence forks after retrieve"
        ids = [ev["id"] for ev in evidence]
        trace[-1] = {**last, "state": {**last["state"], "in_view": ids}}
        return {**state, "retrieved": evidence, "trace": trace}
    return edit


def replace_subquery(subquery: str) -> Edit:
    """After-plan edit: the hop searches with `subquery`."""
    def edit(state: dict[str, Any]) -> dict[str, Any]:
        trace = list(state["trace"])
        last = trace[-1]
        assert last["action"] == Action.PLAN.value, "replace_subquery forks after plan"
        trace[-1] = {**last, "state": {**last["state"], "query": subquery}}
        return {**state, "subquery": subquery, "trace": trace}
    return edit


def force_answer(reason: str = "answer: enough evidence") -> Edit:
    """After-read edit: the agent answers now, as if its planner had decided to."""
    def edit(state: dict[str, Any]) -> dict[str, Any]:
        plan_step = step(Action.PLAN, state.get("hop", 0) + 1, reason)
        return {**state, "done": True, "trace": [*state["trace"], plan_step]}
    return edit


def identity(state: dict[str, Any]) -> dict[str, Any]:
    return state


__all__ = ["AgentConfig", "AgentState", "Executor", "RunResult", "build_trace", "force_answer",
           "identity", "replace_evidence", "replace_subquery"]

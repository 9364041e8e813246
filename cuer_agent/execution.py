"""Run a system on an example; fork a run at hop h and let the same agent re-execute the suffix.

Semantics (tested in tests/test_execution.py):

* **run** streams the compiled graph and keeps a JSON-native *snapshot* of the state
  after every node, keyed ``"<hop>:<node>"`` for a hop's first attempt and
  ``"<hop>.<attempt>:<node>"`` for its retries (hop and attempt of the step the node
  appended); ``"0:start"`` is the initial state, ``"final:answer"`` the end.
* **fork(base, hop, boundary, edit, condition)** copies the snapshot at a boundary of
  hop *h*, applies `edit`, seeds a fresh thread with it via ``update_state(...,
  as_node=<node>)`` and resumes with ``invoke(None)``: LangGraph's own edges choose what
  runs next, and nothing before the boundary runs again (no skill call is spent on the
  prefix). Boundaries: ``"plan"`` and ``"retrieve"`` (after hop h's *first* plan or
  retrieval: where a fault meets the hop), ``"read"`` (after hop h's *last* read: the
  boundary between hop h and h+1; ``read`` of hop 0 is the initial state).
* **conditions**: a run may execute under a `Condition` (a fault in force, see
  `cuer_agent.graphs.state`). The nodes consult it for the sub-query issued and the
  evidence returned, and the executor caps the hop budget with it; a fork takes the
  condition it is given (by default its base run's), and every later re-execution of the
  run — retries, regenerated suffixes, probes — meets the same fault.
* **reanswer(base, overrides)** (frozen): replace some hops' evidence, keep every other
  hop as observed, run only ``answer``.
* **rerun_hop(run, j)** and **repair_and_regenerate(run, j)**: re-execute hop j with hop j
  *repaired* (`Condition.repaired(j)`: a clean retriever and sub-query at hop j), keep
  hops < j as observed; the first stops after hop j, the second lets the agent continue
  under the fault as it held in the run — so regenerating from hop 1 is not a clean
  restart, and a suffix that asks the faulted query again meets the fault again.
* **continue_retrieving(run)**: one hop more than the run took, with that hop repaired
  (a forced early stop is lifted; other faults still hold).

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
from cuer_agent.graphs.single_shot import build_single_shot_graph
from cuer_agent.graphs.state import (
    AgentContext,
    AgentState,
    Condition,
    initial_state,
    wants_retry,
)
from cuer_agent.llm.backends import BackendError, SkillClient
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Action, Trace, build_trace

Boundary = Literal["plan", "retrieve", "read"]
Mode = Literal["agentic", "single_shot"]
Edit = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class AgentConfig:
    """The system under test: mode, hop budget, evidence per hop, retries per hop."""

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
    condition: Condition | None = field(default=None, repr=False)
    """The fault in force during this execution (None: a clean run)."""
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
        # The hop budget is not in the trace's meta: a forced early stop runs under a
        # lowered budget, and the trace must not tell it apart from a run that spent its own.
        self.meta = {"mode": self.config.mode, "k": self.config.k, **(meta or {})}

    # Pickled as its recipe; a worker process compiles its own graph (the checkpointer
    # holds live threads' state and is not shared).
    def __getstate__(self) -> dict[str, Any]:
        return {"skills": self.skills, "config": self.config, "meta": self.meta}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- running ----------------------------------------------------------------------------
    def run(self, example: Example, retriever: Retriever,
            condition: Condition | None = None) -> RunResult:
        state = initial_state(example.id, example.question, hop_budget=self.config.hop_budget,
                              k=self.config.k, retries_per_hop=self.config.retries_per_hop)
        return self._execute(example.id, retriever, state, as_node=None, condition=condition)

    def fork(self, base: RunResult, hop: int, boundary: Boundary, edit: Edit,
             condition: Condition | Literal["inherit"] | None = "inherit") -> RunResult:
        """Edit the state at a boundary of hop `hop` and re-execute the suffix, under
        `condition` (by default the base run's)."""
        key = boundary_key(base.snapshots, hop, boundary)
        edited = edit(_copy_state(base.snapshots[key]))
        active = base.condition if condition == "inherit" else condition
        result = self._execute(base.example_id, base.retriever, edited, as_node=boundary,
                               condition=active)
        result.snapshots = {**_prefix(base.snapshots, key), key: edited, **result.snapshots}
        return result

    def snapshot(self, base: RunResult, hop: int, boundary: Boundary) -> dict[str, Any]:
        """A deep copy of the state after `boundary` of hop `hop` (hop 0: the initial state)."""
        return _copy_state(base.snapshots[boundary_key(base.snapshots, hop, boundary)])

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
        return self._execute(base.example_id, base.retriever, state, as_node="read",
                             condition=base.condition)

    def rerun_hop(self, run: RunResult, j: int) -> dict[str, Any] | None:
        """Hop j re-executed with hop j repaired: from the observed state after hop j−1 the
        agent plans, retrieves and reads hop j again (retries included), and stops there.
        None if it chose to answer."""
        state = _resume(self.snapshot(run, j - 1, "read"))

        def hop_j_done(key: str, after: dict[str, Any]) -> bool:
            return hop_of_key(key) == j and key.endswith(":read") and not wants_retry(after)

        result = self._execute(run.example_id, run.retriever, state, as_node="read",
                               condition=_repaired(run.condition, j), stop=hop_j_done)
        hops = result.final_state.get("hops", [])
        return hops[j - 1] if len(hops) >= j else None

    def repair_and_regenerate(self, run: RunResult, j: int) -> RunResult:
        """Keep hops < j as observed; the agent re-plans hop j with hop j repaired and
        continues on its own, under the fault as it held in the run."""
        return self.fork(run, j - 1, "read", _resume, condition=_repaired(run.condition, j))

    def continue_retrieving(self, run: RunResult) -> RunResult:
        """One more hop than the observed run took (hop n+1, repaired): the agent may
        search again."""
        n = len(run.trace.hops)
        return self.fork(run, n, "read",
                         lambda s: {**s, "done": False, "hop_budget": max(s["hop_budget"], n + 1)},
                         condition=_repaired(run.condition, n + 1))

    # -- mechanics ----------------------------------------------------------------------------
    def _execute(self, example_id: str, retriever: Retriever, state: dict[str, Any],
                 as_node: str | None, condition: Condition | None = None,
                 stop: Callable[[str, dict[str, Any]], bool] | None = None) -> RunResult:
        context = AgentContext(skills=self.skills, retriever=retriever, condition=condition)
        if condition is not None:  # a forced early stop lowers the budget of every execution
            state = {**state, "hop_budget": condition.hop_budget(state["hop_budget"])}
        # A fresh thread per execution: forks never share checkpoints (safe in parallel).
        thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
        per_hop = 3 * (1 + self.config.retries_per_hop) + 1
        limit = {"recursion_limit": per_hop * (self.config.hop_budget + 2) + 8}
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
                    if stop is not None and stop(key, current):
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
        return RunResult(example_id, trace, snapshots, nodes_run, retriever, condition, keys,
                         spent, current)


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a (plain-data) state: a pickle round trip is ~6x faster than
    `copy.deepcopy`, which matters at one copy per node per execution."""
    return pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))  # type: ignore[no-any-return]


def _snapshot_key(state: dict[str, Any], node: str) -> str:
    """"<hop>:<node>" (first attempt) or "<hop>.<attempt>:<node>" (a retry), the hop and
    attempt being those of the step the node just appended — a plan that decides to
    answer belongs to the hop it declined, not to the last hop."""
    if node == "answer":
        return "final:answer"
    last = (state.get("trace") or [{}])[-1]
    attempt = int(last.get("attempt", 1))
    hop = last.get("hop", 0)
    return f"{hop}:{node}" if attempt == 1 else f"{hop}.{attempt}:{node}"


def hop_of_key(key: str) -> int | None:
    """The hop of a snapshot key ("2:read", "2.2:read" → 2; "final:answer" → None)."""
    head = key.split(":", 1)[0].split(".", 1)[0]
    return int(head) if head.isdigit() else None


def boundary_key(snapshots: dict[str, dict[str, Any]], hop: int, boundary: str) -> str:
    """The snapshot key of a boundary: after the *first* plan or retrieval of hop `hop`,
    or after its *last* read (hop 0's read: the initial state)."""
    if (hop, boundary) == (0, "read"):
        key = "0:start"
    elif boundary == "read":
        reads = [k for k in snapshots if hop_of_key(k) == hop and k.endswith(":read")]
        key = reads[-1] if reads else f"{hop}:read"
    else:
        key = f"{hop}:{boundary}"
    if key not in snapshots:
        raise KeyError(f"no state after {boundary} of hop {hop}")
    return key


def _prefix(snapshots: dict[str, dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """The snapshots taken before `key` (insertion order is execution order)."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in snapshots.items():
        if name == key:
            break
        out[name] = value
    return out


def _repaired(condition: Condition | None, hop: int) -> Condition | None:
    return None if condition is None else condition.repaired(hop)


def _resume(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "done": False}


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


def force_answer() -> Edit:
    """After-read edit: no hop after this one — the budget becomes the hops taken, so the
    agent's own `plan` answers ("the hop budget is spent"), as in a run that spent it."""
    def edit(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "done": False, "hop_budget": state.get("hop", 0)}
    return edit


def identity(state: dict[str, Any]) -> dict[str, Any]:
    return state


__all__ = ["AgentConfig", "AgentState", "Executor", "RunResult", "build_trace", "force_answer",
           "identity", "replace_evidence", "replace_subquery"]

"""The agent under test, described for the study: `AgentSpec`, `load_agent`, `check_spec`.

An agent is a compiled LangGraph graph plus an `AgentSpec`. The spec is the only thing
the executor (`cuer_agent.execution`) knows about an agent: our own agent
(`graphs/agent.py`), the single-shot system (`graphs/single_shot.py`) and a user's
graph (`--agent module:factory` or `--agent path/to/file.py:factory`, the factory
returning ``(graph, spec)``) all run, fork and get probed through the same code.

What a spec says about its graph:

* **roles** — node → the roles it plays: ``plan``, ``retrieve``, ``read``, ``answer``. A
  node may play several (a ReAct ``llm`` node reads hop h, plans hop h+1 or answers).
* **step keys** — `step_key(state, node)` names one node execution after it ran:
  ``"<hop>:<role>"`` (``"<hop>.<attempt>:<role>"`` for a retry) or ``"final:answer"``.
  The executor keeps a snapshot of the state under each key; ``"0:start"`` is the input.
* **boundaries** — where a fork may cut a run. For each of ``plan`` (after hop h's first
  plan: the sub-query is chosen), ``retrieve`` (after hop h's first retrieval: the
  evidence is in), ``read`` (hop h finished, hop h+1 not begun) and ``answer`` (every hop
  finished: only answering is left): the role whose snapshot it is, and the node the
  edited state is written as (LangGraph's ``as_node``, so that the graph's own edges
  choose what runs next). ``read`` of hop 0 is the input state.
* **readers** — `hops(state)`: the finished hops as JSON (`cuer_agent.trace.HopData`);
  `trace(...)`: the observable trace (`trace_from_hops` builds one from `hops` and
  `answer`).
* **writers** — each returns a new full state: `with_evidence` (after ``retrieve``: the
  hop sees these evidence items, `EvidenceData`), `with_subquery` (after ``plan``: the hop searches
  this), `with_hops` (before ``answer``: hops replaced by overrides) and the hop budget,
  one state key (`budget_key`) the graph must honour: a forced early stop lowers it.
* **the retriever** — the graph reaches it through the run context. `context` builds it
  from the skills, the retriever and the fault in force; by default our
  `cuer_agent.agent_context.AgentContext`, whose ``retrieve(hop, query, k)`` and
  ``issue(hop, attempt, query)`` are where a fault condition wraps the tools.

`check_spec` checks a spec against its graph before any work: every node, role, key and
boundary it names must exist, and the graph needs a checkpointer (forks are written
through it). A mismatch is a `ConfigError`: one line naming the node or key, exit code 2.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from cuer_agent._json import JsonObject
from cuer_agent.agent_context import AgentContext
from cuer_agent.errors import ConfigError
from cuer_agent.interventions.repairs import DEFAULT_REPAIRS, REPAIRS
from cuer_agent.llm.backends import SkillClient
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import (
    Action,
    AnswerData,
    Cost,
    EvidenceData,
    HopData,
    HopRecord,
    Step,
    StepState,
    Trace,
)

Role = Literal["plan", "retrieve", "read", "answer"]
Boundary = Literal["plan", "retrieve", "read", "answer"]
State = JsonObject
"""An agent's LangGraph state: its own keys, JSON-native (the edge to a user's graph)."""
ROLES: tuple[str, ...] = get_args(Role)
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)


def default_context(skills: SkillClient, retriever: Retriever, condition: Any) -> Any:
    """Our run context: skills, retriever and the fault in force."""
    return AgentContext(skills=skills, retriever=retriever, condition=condition)


@dataclass(frozen=True)
class AgentSpec:
    """How the study reads, cuts and edits one LangGraph agent (see the module doc).

    Subclass it and implement `input`, `step_key`, `hops`, `answer`, `with_evidence`,
    `with_subquery` and `with_hops` (`check_spec` refuses a spec that leaves one out);
    `trace` has a default built from `hops` and `answer`."""

    name: str
    """Names the agent in traces' meta and in run configs."""
    roles: Mapping[str, Sequence[Role]]
    """Node → the roles it plays."""
    boundaries: Mapping[Boundary, tuple[Role, str]]
    """Boundary → (role of the snapshot it cuts at, node the fork is written as)."""
    keys: Sequence[str] = ()
    """State keys the spec reads or writes (checked against the graph's state)."""
    budget_key: str = "hop_budget"
    """The state key holding the most hops the agent may take (it must honour it)."""
    retries_key: str | None = None
    """The state key holding how often the agent may retry one hop, if it retries: the
    study's control run sets it to 0 (the same agent without its retries). None: the
    agent does not retry, and the control is not run."""
    issues_query: Role = "plan"
    """The role of the node that sends the sub-query (asks the context's ``issue``): a
    query fault at hop h is injected by re-running that node of hop h, no earlier one."""
    mode: Literal["agentic", "single_shot"] = "agentic"
    """The trace's mode."""
    context: Callable[[SkillClient, Retriever, Any], Any] = field(
        default=default_context, compare=False)
    """Builds the graph's run context from skills, retriever and fault condition."""
    repairs: Sequence[str] = DEFAULT_REPAIRS
    """The repairs (`cuer_agent.interventions.repairs`) the probes may make at one of its
    hops on a natural failure; one it cannot take is reported not applicable."""
    shares_state: bool = False
    """True only if the graph's nodes never change a state value in place (they return
    new lists and dicts): the executor then keeps each snapshot as a shallow copy that
    shares unchanged values with the next one, instead of a deep copy per node. False
    (the safe default) for a graph whose nodes may append to or edit what they read."""

    # -- what every spec implements -------------------------------------------------------
    def input(self, example_id: str, question: str, *, hop_budget: int, k: int,
              retries_per_hop: int) -> State:
        """The graph's input state for one question."""
        raise NotImplementedError

    def step_key(self, state: State, node: str) -> str:
        """The key of the execution of `node` that produced `state` (module doc)."""
        raise NotImplementedError

    def hops(self, state: State) -> list[HopData]:
        """The hops finished in `state`, as JSON `HopRecord`s."""
        raise NotImplementedError

    def with_evidence(self, state: State, evidence: list[EvidenceData]) -> State:
        """After ``retrieve``: the current hop sees `evidence`."""
        raise NotImplementedError

    def with_subquery(self, state: State, subquery: str) -> State:
        """After ``plan``: the current hop searches with `subquery`."""
        raise NotImplementedError

    def with_hops(self, state: State,
                  overrides: Mapping[int, list[EvidenceData] | HopData]) -> State:
        """Before ``answer``: hop h replaced by `overrides[h]` — an evidence list (all of
        it selected, the finding kept) or a whole JSON `HopRecord` — every other hop as
        observed, and the agent set to answer next."""
        raise NotImplementedError

    def answer(self, state: State) -> AnswerData:
        """The final answer: {answer, confidence, used_ids, rationale} ({} before it)."""
        raise NotImplementedError

    # -- defaults ---------------------------------------------------------------------------
    def with_retry(self, state: State, hop: int) -> State | None:
        """After hop `hop`'s last read: the state with that hop's attempt marked failed
        and one more retry allowed, so the agent's own retry planner asks another
        sub-query (the `replan` repair). None (the default): the agent cannot be asked to
        retry, and `replan` is not applicable to it."""
        return None

    def hop_done(self, key: str, state: State, hop: int) -> bool:
        """Has hop `hop` been read for good once the node execution `key` ran?"""
        return len(self.hops(state)) >= hop

    def trace(self, state: State, *, example_id: str, question: str, meta: Mapping[str, object],
              cost: Cost, error: str = "") -> Trace:
        """The observable trace of a (possibly partial) final state."""
        return trace_from_hops(example_id, question, self.hops(state), self.answer(state),
                               mode=self.mode, meta=meta, cost=cost, error=error)

    def with_budget(self, state: State, budget: int) -> State:
        return {**state, self.budget_key: budget}

    def budget(self, state: State) -> int:
        return int(state[self.budget_key])

    def with_retries(self, state: State, retries: int) -> State:
        """The state with at most `retries` retries per hop (`retries_key`)."""
        if self.retries_key is None:
            raise ValueError(f"agent {self.name!r} declares no retries_key")
        return {**state, self.retries_key: retries}


def hop_of_key(key: str) -> int | None:
    """The hop of a step key ("2:read", "2.2:read" → 2; "final:answer" → None)."""
    head = key.split(":", 1)[0].split(".", 1)[0]
    return int(head) if head.isdigit() else None


def trace_from_hops(example_id: str, question: str, hops: Sequence[HopData],
                    answer: AnswerData, *, mode: Literal["agentic", "single_shot"],
                    meta: Mapping[str, object], cost: Cost, error: str = "") -> Trace:
    """A trace from hop records: per hop PLAN, RETRIEVE, then — once the hop is read —
    SELECT, INFER, VERIFY; then ANSWER. For agents that keep no step log of their own."""
    steps: list[Step] = []
    records = []
    for raw in hops:
        rec = HopRecord.model_validate(raw)
        records.append(rec)
        common = {"query": rec.subquery, "in_view": tuple(e.id for e in rec.retrieved)}
        read = {**common, "selected": rec.selected}
        steps += [Step(action=Action.PLAN, hop=rec.hop, state=StepState(query=rec.subquery)),
                  Step(action=Action.RETRIEVE, hop=rec.hop, state=StepState(**common)),
                  Step(action=Action.SELECT, hop=rec.hop, state=StepState(**read)),
                  Step(action=Action.INFER, hop=rec.hop,
                       state=StepState(**read, candidate=rec.finding)),
                  Step(action=Action.VERIFY, hop=rec.hop, state=StepState(
                      **read, candidate=rec.finding, support=rec.support,
                      confidence=rec.confidence))]
    text = str(answer.get("answer", ""))
    if answer:
        steps.append(Step(action=Action.ANSWER, hop=0, state=StepState(
            query=question, candidate=text, confidence=answer.get("confidence"))))
    return Trace(example_id=example_id, question=question, mode=mode, steps=tuple(steps),
                 hops=tuple(records), answer=text, confidence=answer.get("confidence"),
                 used_ids=tuple(answer.get("used_ids", ())),
                 rationale=str(answer.get("rationale", "")), cost=cost,
                 status="error" if error else "ok", error=error, meta=dict(meta))


# ---------------------------------------------------------------------------- checking

REQUIRED_METHODS = ("input", "step_key", "hops", "answer", "with_evidence", "with_subquery",
                    "with_hops")

def check_spec(graph: Any, spec: Any, where: str = "agent") -> None:
    """Raise `ConfigError` (one line) if `spec` does not describe `graph`."""
    if not isinstance(spec, AgentSpec):
        raise ConfigError(f"{where}: the factory's spec is a {type(spec).__name__}, "
                          "not an AgentSpec")
    missing = [name for name in REQUIRED_METHODS
               if getattr(type(spec), name) is getattr(AgentSpec, name)]
    if missing:
        raise ConfigError(f"{where}: {type(spec).__name__} does not implement "
                          f"{', '.join(missing)} (see cuer_agent.agents.AgentSpec)")
    nodes = {n for n in getattr(graph, "nodes", {}) if not n.startswith("__")}
    if not nodes or not hasattr(graph, "update_state"):
        raise ConfigError(f"{where}: the factory's graph is not a compiled LangGraph graph "
                          "(call .compile() on the StateGraph)")
    for node, roles in spec.roles.items():
        if node not in nodes:
            raise ConfigError(f"{where}: spec names node {node!r}, which the graph does not "
                              f"have (nodes: {', '.join(sorted(nodes))})")
        for role in roles:
            if role not in ROLES:
                raise ConfigError(f"{where}: node {node!r} has unknown role {role!r} "
                                  f"(roles: {', '.join(ROLES)})")
    played = {role for roles in spec.roles.values() for role in roles}
    for role in ("retrieve", "answer"):
        if role not in played:
            raise ConfigError(f"{where}: no node plays the {role!r} role")
    for boundary in BOUNDARIES:
        if boundary not in spec.boundaries:
            if spec.mode == "single_shot" and boundary != "retrieve":
                continue  # one hop, no plan: only the retrieval is cut
            raise ConfigError(f"{where}: spec has no {boundary!r} boundary")
        role, node = spec.boundaries[boundary]
        if node not in nodes:
            raise ConfigError(f"{where}: boundary {boundary!r} is written as node {node!r}, "
                              "which the graph does not have")
        if role not in played:
            raise ConfigError(f"{where}: boundary {boundary!r} cuts after role {role!r}, "
                              "which no node plays")
    if spec.issues_query not in played:
        raise ConfigError(f"{where}: issues_query is {spec.issues_query!r}, a role no node "
                          "plays")
    for name in spec.repairs:
        if name not in REPAIRS:
            raise ConfigError(f"{where}: spec allows unknown repair {name!r} (repairs: "
                              f"{', '.join(REPAIRS.names())})")
    channels = {c for c in getattr(graph, "channels", {})
                if not c.startswith(("__", "branch:"))}
    for key in (*spec.keys, spec.budget_key, *([spec.retries_key] if spec.retries_key else [])):
        if key not in channels:
            raise ConfigError(f"{where}: state key {key!r} is not in the graph's state "
                              f"schema (keys: {', '.join(sorted(channels))})")
    if not getattr(graph, "checkpointer", None):
        raise ConfigError(f"{where}: the graph has no checkpointer; compile it with one "
                          "(e.g. checkpointer=InMemorySaver()) so that runs can be forked")


# ---------------------------------------------------------------------------- loading

Factory = Callable[[], tuple[Any, AgentSpec]]


BUILT_IN_AGENT = "cuer-agent"
"""The built-in agent's name (its spec's): what `agent_label` gives without `--agent`."""


def agent_label(ref: str | None) -> str:
    """The agent an ``--agent`` reference names, in characters safe in a directory name:
    ``examples/react_agent.py:build`` → ``react_agent.build``, ``mypkg.agents:make`` →
    ``mypkg.agents.make``; None (the built-in agent) → ``cuer-agent``. Part of the default
    run directory of `evaluate`, so runs of different agents do not collide."""
    if ref is None:
        return BUILT_IN_AGENT
    target, _, name = ref.rpartition(":")
    if target.endswith(".py"):
        target = Path(target).stem
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", ".".join(p for p in (target, name) if p))
    return label.strip(".-") or "agent"


def load_agent(ref: str | Factory) -> tuple[Any, AgentSpec]:
    """``module:factory`` or ``path/to/file.py:factory`` (or the factory itself) → the
    factory's (graph, spec), checked with `check_spec`. Bad references fail with one
    `ConfigError` line."""
    if callable(ref):
        factory, ref = ref, f"{getattr(ref, '__module__', '?')}:{getattr(ref, '__name__', '?')}"
    else:
        target, sep, name = ref.rpartition(":")
        if not sep or not target or not name.isidentifier():
            raise ConfigError(f"--agent {ref!r}: expected module:factory or file.py:factory")
        found = getattr(_import(ref, target), name, None)
        if not callable(found):
            raise ConfigError(f"--agent {ref!r}: {target} has no factory {name!r}")
        factory = found
    try:
        built = factory()
    except Exception as exc:  # the user's code: report, do not crash
        raise ConfigError(f"--agent {ref!r}: the factory raised "
                          f"{type(exc).__name__}: {exc}") from exc
    if not (isinstance(built, tuple) and len(built) == 2):
        raise ConfigError(f"--agent {ref!r}: the factory must return (graph, spec), "
                          f"got {type(built).__name__}")
    graph, spec = built
    check_spec(graph, spec, where=f"--agent {ref!r}")
    return graph, spec


def _import(ref: str, target: str) -> Any:
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise ConfigError(f"--agent {ref!r}: no file {target}")
        # One module per file, named after its path: loading it twice reuses it, and
        # classes defined in it stay the same objects.
        name = "cuer_user_agent_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise ConfigError(f"--agent {ref!r}: importing {target} raised "
                              f"{type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(target)
    except ImportError as exc:
        raise ConfigError(f"--agent {ref!r}: cannot import module {target!r} ({exc})") from exc

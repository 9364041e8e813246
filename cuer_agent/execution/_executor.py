"""The `Executor`: runs, forks, re-answers and probes one agent through its spec, and
reuses an execution already made when the skills are repeatable. Semantics:
`cuer_agent.execution`."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import pickle
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from typing_extensions import TypedDict  # typing's has no pydantic schema on 3.11

from cuer_agent._lru import LRU
from cuer_agent.agent_context import Condition, to_state
from cuer_agent.agents import AgentSpec, Boundary, Factory, State, hop_of_key, load_agent
from cuer_agent.data import Example
from cuer_agent.errors import AgentNodeError, CuerError, node_of
from cuer_agent.execution._edits import Edit, identity
from cuer_agent.execution._results import AgentConfig, Mode, RunResult, Spent
from cuer_agent.graphs.state import hop_from_state, hop_to_state
from cuer_agent.llm.backends import BackendError, RequestLog, SkillClient
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Cost, Evidence, HopRecord

_V = TypeVar("_V")
NO_COST = Cost()


def our_system(mode: Mode) -> tuple[Any, AgentSpec]:
    """Our agent or the single-shot system, with its spec."""
    from cuer_agent.graphs import agent, single_shot

    return agent.build() if mode == "agentic" else single_shot.build()


class _Recipe(TypedDict):
    """What an `Executor` pickles as: its constructor's arguments."""

    skills: SkillClient
    config: AgentConfig
    meta: Mapping[str, object] | None
    agent: str | Factory | None


class Executor:
    """Runs one agent; the graph is compiled (or the user's factory called) once and
    reused. `agent`: ``module:factory``, ``file.py:factory`` or the factory itself (None:
    our system of ``config.mode``)."""

    def __init__(self, skills: SkillClient, config: AgentConfig | None = None,
                 meta: Mapping[str, object] | None = None, agent: str | Factory | None = None
                 ) -> None:
        self.skills = skills
        self.config = config or AgentConfig()
        self.agent = agent
        self.graph, self.spec = load_agent(agent) if agent else our_system(self.config.mode)
        # The hop budget is not in the trace's meta: a forced early stop runs under a
        # lowered budget, and the trace must not tell it apart from a run that spent its own.
        named = {"agent": self.spec.name} if agent else {}
        self.meta: dict[str, object] = {"mode": self.spec.mode, "k": self.config.k, **named,
                                        **(meta or {})}
        self._meta = meta
        self._made = _Executions()

    # Pickled as its recipe; a worker process compiles its own graph (the checkpointer
    # holds live threads' state and is not shared).
    def __getstate__(self) -> _Recipe:
        return {"skills": self.skills, "config": self.config, "meta": self._meta,
                "agent": self.agent}

    def __setstate__(self, state: _Recipe) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- running ----------------------------------------------------------------------------
    def run(self, example: Example, retriever: Retriever,
            condition: Condition | None = None) -> RunResult:
        config = self.config
        state = self.spec.input(example.id, example.question, hop_budget=config.hop_budget,
                                k=config.k, retries_per_hop=config.retries_per_hop)
        return self._execute(example.id, example.question, retriever, state, as_node=None,
                             condition=condition)

    def fork(self, base: RunResult, hop: int, boundary: Boundary, edit: Edit,
             condition: Condition | Literal["inherit"] | None = "inherit") -> RunResult:
        """Edit the state at a boundary of hop `hop` and re-execute the suffix, under
        `condition` (by default the base run's)."""
        key = self.boundary_key(base, hop, boundary)
        edited = edit(self.spec, _copy_state(base.snapshots[key]))
        active = base.condition if condition == "inherit" else condition
        result = self._execute(base.example_id, base.question, base.retriever, edited,
                               as_node=self.spec.boundaries[boundary][1], condition=active,
                               inherited=base.cost_at.get(key, NO_COST))
        result.snapshots = {**_prefix(base.snapshots, key), key: edited, **result.snapshots}
        result.cost_at = {**_prefix(base.cost_at, key), **result.cost_at}
        return result

    def boundary_key(self, base: RunResult, hop: int, boundary: Boundary) -> str:
        """The snapshot key of a boundary: after the *first* plan or retrieval of hop
        `hop`, or after its *last* read (hop 0's read: the initial state)."""
        role = self.spec.boundaries[boundary][0]
        if hop == 0 and boundary in ("read", "answer"):
            key = "0:start"
        elif boundary in ("read", "answer"):
            last = [k for k in base.snapshots if hop_of_key(k) == hop and k.endswith(f":{role}")]
            key = last[-1] if last else f"{hop}:{role}"
        else:
            key = f"{hop}:{role}"
        if key not in base.snapshots:
            raise KeyError(f"no state after {boundary} of hop {hop}")
        return key

    def snapshot(self, base: RunResult, hop: int, boundary: Boundary) -> State:
        """A deep copy of the state at a boundary of hop `hop` (hop 0: the initial state)."""
        return _copy_state(base.snapshots[self.boundary_key(base, hop, boundary)])

    def reanswer(self, base: RunResult,
                 overrides: Mapping[int, Sequence[Evidence] | HopRecord]) -> RunResult:
        """Frozen re-answer: replace hop h by `overrides[h]` — an evidence list (all of it
        selected, the finding kept) or a whole hop record — keep every other hop as
        observed, and let the agent answer. The spec gets them as JSON (`HopData`, a list
        of `EvidenceData`)."""
        last = len(self.spec.hops(base.final_state))
        as_data = {hop: hop_to_state(new) if isinstance(new, HopRecord) else to_state(new)
                   for hop, new in overrides.items()}
        state = self.spec.with_hops(self.snapshot(base, last, "read"), as_data)
        return self._execute(base.example_id, base.question, base.retriever, state,
                             as_node=self.spec.boundaries["answer"][1],
                             condition=base.condition)

    def rerun_hop(self, run: RunResult, j: int) -> HopRecord | None:
        """Hop j re-executed with hop j repaired: from the observed state after hop j−1 the
        agent plans, retrieves and reads hop j again (retries included), and stops there.
        None if it chose to answer."""
        spec = self.spec
        result = self._execute(run.example_id, run.question, run.retriever,
                               self.snapshot(run, j - 1, "read"),
                               as_node=spec.boundaries["read"][1],
                               condition=_repaired(run.condition, j),
                               stop=lambda key, after: spec.hop_done(key, after, j),
                               stop_key=("hop_done", j))
        hops = spec.hops(result.final_state)
        return hop_from_state(hops[j - 1]) if len(hops) >= j else None

    def repair_and_regenerate(self, run: RunResult, j: int) -> RunResult:
        """Keep hops < j as observed; the agent re-plans hop j with hop j repaired and
        continues on its own, under the fault as it held in the run."""
        return self.fork(run, j - 1, "read", identity, condition=_repaired(run.condition, j))

    def repaired_hop(self, run: RunResult, j: int, condition: Condition | None,
                     retry: bool = False) -> HopRecord | None:
        """Hop j re-executed under a repair (`cuer_agent.interventions.repairs`) and
        stopped there: under `condition` from the observed state after hop j−1, or, with
        `retry`, from the state after hop j's last read with that hop re-opened for a retry
        (`AgentSpec.with_retry`). None if the agent answered instead."""
        spec = self.spec
        start, entry = self._repair_start(run, j, retry)
        result = self._execute(run.example_id, run.question, run.retriever, start,
                               as_node=spec.boundaries["read"][1], condition=condition,
                               stop=lambda key, after: spec.hop_done(key, after, j),
                               stop_key=("hop_done", j, entry))
        hops = spec.hops(result.final_state)
        return hop_from_state(hops[j - 1]) if len(hops) >= j else None

    def regenerated_after_repair(self, run: RunResult, j: int, condition: Condition | None,
                                 retry: bool = False) -> RunResult:
        """Hops < j as observed, hop j under a repair (as `repaired_hop`), and the rest
        regenerated by the agent."""
        if retry:
            return self.fork(run, j, "read", lambda spec, s: _reopened(spec, s, j),
                             condition=condition)
        return self.fork(run, j - 1, "read", identity, condition=condition)

    def _repair_start(self, run: RunResult, j: int, retry: bool) -> tuple[State, str]:
        if retry:
            return _reopened(self.spec, self.snapshot(run, j, "read"), j), "retry"
        return self.snapshot(run, j - 1, "read"), "plan"

    def continue_retrieving(self, run: RunResult) -> RunResult:
        """One more hop than the observed run took (hop n+1, repaired): the agent may
        search again."""
        n = len(run.trace.hops)
        return self.fork(run, n, "read",
                         lambda spec, s: spec.with_budget(s, max(spec.budget(s), n + 1)),
                         condition=_repaired(run.condition, n + 1))

    # -- mechanics ----------------------------------------------------------------------------
    def _execute(self, example_id: str, question: str, retriever: Retriever,
                 state: State, as_node: str | None,
                 condition: Condition | None = None,
                 stop: Callable[[str, State], bool] | None = None,
                 inherited: Cost = NO_COST, stop_key: object = None) -> RunResult:
        """Execute from `state` (entered as written by `as_node`; None: from the start).

        With repeatable skills (`SkillClient.repeatable`) an execution is a function of
        its inputs, so one already made here — same example, state, entry node, condition,
        stop rule (`stop_key` names it) and inherited cost — is reused instead of
        streamed again: the same result, and its requests counted again in every open
        request log, as a re-run answered from the cache would be. Probes repeat many
        forks (a diagnoser and its free variant, a fault and its repair); reusing them
        leaves every output byte as it was and saves the graph's per-step work."""
        spec = self.spec
        if condition is not None:  # a forced early stop lowers the budget of every execution
            state = spec.with_budget(state, condition.hop_budget(spec.budget(state)))
        blob = pickle.dumps(state, pickle.HIGHEST_PROTOCOL)
        key = None
        if self.skills.repeatable and (stop is None or stop_key is not None):
            key = _execution_key(blob, example_id, question, retriever, as_node, condition,
                                 stop_key, inherited)
            made = self._made.get(key)
            if made is not None:
                self.skills.replay(made[1])
                return _fresh(made[0])
        result, log = self._stream(example_id, question, retriever, blob, as_node,
                                   condition, stop, inherited)
        if key is not None and not result.trace.error:  # a failed request may succeed later
            self._made.put(key, (result, log))
        return _fresh(result)

    def _stream(self, example_id: str, question: str, retriever: Retriever, blob: bytes,
                as_node: str | None, condition: Condition | None,
                stop: Callable[[str, State], bool] | None,
                inherited: Cost) -> tuple[RunResult, RequestLog]:
        """Stream the graph from the pickled state `blob`, a snapshot after every node."""
        spec, graph = self.spec, self.graph
        state = pickle.loads(blob)
        context = spec.context(self.skills, retriever, condition)
        # A fresh thread per execution: forks never share checkpoints (safe in parallel).
        thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
        per_hop = 3 * (1 + self.config.retries_per_hop) + 1
        limit = {"recursion_limit": per_hop * (self.config.hop_budget + 2) + 8}
        snapshots: dict[str, State] = {}
        cost_at: dict[str, Cost] = {}
        nodes_run: list[str] = []
        current: State = pickle.loads(blob)
        if as_node is None:
            snapshots["0:start"] = pickle.loads(blob)
            cost_at["0:start"] = inherited
            stream_input: Any = state
        else:
            graph.update_state(thread, state, as_node=as_node)
            stream_input = None
        error = ""
        collecting = self.skills.collect()
        log = collecting.__enter__()
        try:
            last_node = None
            for mode, chunk in graph.stream(stream_input, {**thread, **limit}, context=context,
                                            stream_mode=["updates", "values"],
                                            # forks start from our own snapshots,
                                            # so per-step checkpoints are waste
                                            durability="exit"):
                if mode == "updates":
                    last_node = next(iter(chunk))
                elif last_node is not None:
                    current = dict(chunk) if spec.shares_state else _copy_state(chunk)
                    key = spec.step_key(current, last_node)
                    snapshots[key] = current
                    cost_at[key] = _plus(inherited, log)
                    nodes_run.append(key)
                    if stop is not None and stop(key, current):
                        break
        except BackendError as exc:
            error = str(exc)
        except CuerError:  # already one line for the user (a rejected parameter, a config)
            raise
        except Exception as exc:  # the agent's own code failed: name the node, keep the cause
            node = node_of(exc)
            where = f"node {node!r}" if node else "the graph"
            raise AgentNodeError(f"agent {spec.name!r}: {where} raised {type(exc).__name__}: "
                                 f"{exc}", node) from exc
        finally:
            collecting.__exit__(None, None, None)
            graph.checkpointer.delete_thread(thread["configurable"]["thread_id"])
        trace = spec.trace(current, example_id=example_id, question=question, meta=self.meta,
                           cost=_plus(inherited, log), error=error)
        spent: Spent = {"llm_calls": len(log), "prompt_tokens": log.prompt_tokens,
                 "completion_tokens": log.completion_tokens,
                 "parse_failures": log.parse_failures, "retries": log.retries,
                 "by_skill": log.spent_by_skill()}
        return RunResult(example_id, trace, snapshots, nodes_run, retriever, condition,
                         [k[:16] for k in log], spent, current, question, cost_at), log


class _Executions:
    """Executions already made by one executor, by `_execution_key`; the least recently
    used are forgotten past `size` (a probe's repeats come soon after the original)."""

    def __init__(self, size: int = 256) -> None:
        self._made: LRU[str, tuple[RunResult, RequestLog]] = LRU(size)
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[RunResult, RequestLog] | None:
        with self._lock:
            return self._made.get(key)

    def put(self, key: str, made: tuple[RunResult, RequestLog]) -> None:
        with self._lock:
            self._made.put(key, made)


def _execution_key(blob: bytes, example_id: str, question: str, retriever: Retriever,
                   as_node: str | None, condition: Condition | None, stop_key: object,
                   inherited: Cost) -> str:
    """What decides an execution. The retriever is named by identity (a stored result
    holds it, so no other object can take its id meanwhile); a condition by its repr,
    which names its fault functions by identity too: equal keys, equal executions."""
    digest = hashlib.sha256(blob)
    digest.update(repr((example_id, question, id(retriever), as_node, repr(condition),
                        repr(stop_key), repr(inherited))).encode())
    return digest.hexdigest()


def _fresh(result: RunResult) -> RunResult:
    """A copy of a stored result whose containers a caller may replace or extend (`fork`
    does) without touching the stored one; states and traces are never changed in place."""
    return dataclasses.replace(result, snapshots=dict(result.snapshots),
                               nodes_run=list(result.nodes_run),
                               request_keys=list(result.request_keys),
                               spent=copy.deepcopy(result.spent),
                               cost_at=dict(result.cost_at))


def _plus(cost: Cost, log: RequestLog) -> Cost:
    return Cost(llm_calls=cost.llm_calls + len(log),
                prompt_tokens=cost.prompt_tokens + log.prompt_tokens,
                completion_tokens=cost.completion_tokens + log.completion_tokens)


def _copy_state(state: State) -> State:
    """A deep copy of a state: a pickle round trip is ~6x faster than `copy.deepcopy`,
    which matters at one copy per node per execution."""
    copied: State = pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))
    return copied


def _prefix(items: dict[str, _V], key: str) -> dict[str, _V]:
    """The entries taken before `key` (insertion order is execution order)."""
    out: dict[str, _V] = {}
    for name, value in items.items():
        if name == key:
            break
        out[name] = value
    return out


def _reopened(spec: AgentSpec, state: State, hop: int) -> State:
    reopened = spec.with_retry(state, hop)
    if reopened is None:
        raise CuerError(f"agent {spec.name!r} cannot re-open hop {hop} for a retry")
    return reopened


def _repaired(condition: Condition | None, hop: int) -> Condition | None:
    return None if condition is None else condition.repaired(hop)


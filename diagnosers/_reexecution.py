"""The probe a probing diagnoser gets: the same agent re-executed from the observed run,
plus a correctness oracle, under a budget of re-executions. It counts what it spends.

Every re-execution runs in the observed run's environment: the fault in force during the
run (`RunResult.condition`) holds in the probe too, except at the hop the probe repairs
(`cuer_agent.execution`). On a natural failure (no fault) a hop is repaired by one of the
repairs the agent allows (`NaturalRepairs`, `cuer_agent.interventions.repairs`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuer_agent.agents import AgentSpec
from cuer_agent.execution import Executor, RunResult
from cuer_agent.interventions.repairs import get_repair
from cuer_agent.trace import Evidence, HopRecord, Trace

from ._base import ProbeBudgetExceeded


@dataclass(frozen=True)
class NaturalRepairs:
    """The repairs a probe may make on a natural failure: the agent's allowed ones
    (`AgentSpec.repairs`) and, for `gold-support`, the gold passages per hop (a gold
    oracle; None for a hop the gold chain says nothing about)."""

    names: tuple[str, ...]
    support: Callable[[int], Sequence[Evidence] | None] = lambda j: None


class ExecutionProbe:
    def __init__(self, executor: Executor, run: RunResult, oracle: Callable[[str], bool],
                 budget: int = 8, natural: NaturalRepairs | None = None) -> None:
        self._executor = executor
        self._run = run
        self._oracle = oracle
        self._natural = natural
        self.repairs: tuple[str, ...] = () if natural is None else natural.names
        """Repairs tried per hop (none on an injected fault: its own repair is tried)."""
        self.budget = budget
        """Most re-executions allowed for one diagnosis."""
        self.probes = 0
        self.calls = 0
        self.tokens = 0

    def _spend(self) -> None:
        if self.probes >= self.budget:
            raise ProbeBudgetExceeded(f"probe budget of {self.budget} re-executions spent")
        self.probes += 1

    def _count(self, result: RunResult) -> RunResult:
        self.calls += result.spent.get("llm_calls", 0)
        self.tokens += (result.spent.get("prompt_tokens", 0)
                        + result.spent.get("completion_tokens", 0))
        return result

    def rerun_hop(self, j: int, repair: str | None = None) -> HopRecord | None:
        self._spend()
        with self._executor.skills.collect() as keys:
            if repair is None:
                record = self._executor.rerun_hop(self._run, j)
            else:
                fix = get_repair(repair)
                record = self._executor.repaired_hop(
                    self._run, j, fix.condition(j, self._support(j)), retry=fix.retry)
        self.calls += len(keys)
        return record

    def reanswer_with_hop(self, j: int, hop_record: HopRecord) -> Trace:
        self._spend()
        return self._count(self._executor.reanswer(self._run, {j: hop_record})).trace

    def regenerate_from(self, j: int, repair: str | None = None) -> Trace:
        self._spend()
        if repair is None:
            return self._count(self._executor.repair_and_regenerate(self._run, j)).trace
        fix = get_repair(repair)
        return self._count(self._executor.regenerated_after_repair(
            self._run, j, fix.condition(j, self._support(j)), retry=fix.retry)).trace

    def not_applicable(self, repair: str, j: int) -> str | None:
        """Why `repair` cannot be made at hop j of this run (None: it can)."""
        spec = self._executor.spec
        retries = (spec.retries_key is not None
                   and type(spec).with_retry is not AgentSpec.with_retry)
        return get_repair(repair).not_applicable(
            allowed=tuple(spec.repairs), retries=retries,
            support=self._natural.support(j) if self._natural else None,
            rereads=self._executor.skills.rereads)

    def _support(self, j: int) -> Sequence[Evidence]:
        return (self._natural.support(j) or ()) if self._natural else ()

    def continue_retrieving(self) -> Trace:
        self._spend()
        return self._count(self._executor.continue_retrieving(self._run)).trace

    def is_correct(self, answer: str) -> bool:
        return self._oracle(answer)

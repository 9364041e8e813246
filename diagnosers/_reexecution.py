"""The probe a probing diagnoser gets: the same agent re-executed from the observed run,
plus a correctness oracle, under a budget of re-executions. It counts what it spends.

Every re-execution runs in the observed run's environment: the fault in force during the
run (`RunResult.condition`) holds in the probe too, except at the hop the probe repairs
(`cuer_agent.execution`)."""

from __future__ import annotations

from collections.abc import Callable

from cuer_agent.execution import Executor, RunResult
from cuer_agent.trace import HopRecord, Trace

from ._base import ProbeBudgetExceeded


class ExecutionProbe:
    def __init__(self, executor: Executor, run: RunResult, oracle: Callable[[str], bool],
                 budget: int = 8) -> None:
        self._executor = executor
        self._run = run
        self._oracle = oracle
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

    def rerun_hop(self, j: int) -> HopRecord | None:
        self._spend()
        with self._executor.skills.collect() as keys:
            record = self._executor.rerun_hop(self._run, j)
        self.calls += len(keys)
        return record

    def reanswer_with_hop(self, j: int, hop_record: HopRecord) -> Trace:
        self._spend()
        return self._count(self._executor.reanswer(self._run, {j: hop_record})).trace

    def regenerate_from(self, j: int) -> Trace:
        self._spend()
        return self._count(self._executor.repair_and_regenerate(self._run, j)).trace

    def continue_retrieving(self) -> Trace:
        self._spend()
        return self._count(self._executor.continue_retrieving(self._run)).trace

    def is_correct(self, answer: str) -> bool:
        return self._oracle(answer)

"""Controls on step traces: what any log would score, set beside every step diagnoser.

* `chance` — a uniform guess over the log's steps: its score is the analytic
  expectation (each step weighted 1/length), not a seeded draw;
* `first-step` — the log's first step;
* `last-step` — its last step.

Each control's agent is the agent of the step it names. They read the steps only.
"""

from __future__ import annotations

from typing import Any

from cuer_agent.step_trace import StepTrace

from ._step_base import Guess, StepPrediction, step_diagnoser


class _Control:
    """A control names steps by position alone; `positions` says which and how much
    weight each gets, and `predict` turns them into guesses (each step's own agent)."""

    control = True
    reads = "log"
    name = ""

    def __init__(self, **_options: Any) -> None:  # reads no option: the log is enough
        pass

    def not_run(self) -> str:
        return ""

    def positions(self, trace: StepTrace) -> tuple[list[int], str]:
        raise NotImplementedError

    def predict(self, trace: StepTrace) -> StepPrediction:
        if not trace.steps:
            return StepPrediction((), "an empty log")
        numbers, why = self.positions(trace)
        return StepPrediction(tuple(Guess(step=n, agent=trace.agent_at(n) or "",
                                          weight=1 / len(numbers)) for n in numbers), why)


@step_diagnoser("chance", help="a uniform step of the log (analytic expectation)")
class Chance(_Control):
    name = "chance"

    def positions(self, trace: StepTrace) -> tuple[list[int], str]:
        return list(trace.numbers), f"uniform over {len(trace.steps)} steps"


@step_diagnoser("first-step", help="the log's first step")
class FirstStep(_Control):
    name = "first-step"

    def positions(self, trace: StepTrace) -> tuple[list[int], str]:
        return [trace.first_step], "the first step"


@step_diagnoser("last-step", help="the log's last step")
class LastStep(_Control):
    name = "last-step"

    def positions(self, trace: StepTrace) -> tuple[list[int], str]:
        return [trace.numbers[-1]], "the last step"

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
    control = True
    reads = "log"
    name = ""

    def __init__(self, **_options: Any) -> None:  # reads no option: the log is enough
        pass

    def not_run(self) -> str:
        return ""

    def predict(self, trace: StepTrace) -> StepPrediction:
        raise NotImplementedError


def _at(trace: StepTrace, number: int, weight: float = 1.0) -> Guess:
    return Guess(step=number, agent=trace.agent_at(number) or "", weight=weight)


@step_diagnoser("chance", help="a uniform step of the log (analytic expectation)")
class Chance(_Control):
    name = "chance"

    def predict(self, trace: StepTrace) -> StepPrediction:
        if not trace.steps:
            return StepPrediction((), "an empty log")
        weight = 1 / len(trace.steps)
        return StepPrediction(tuple(_at(trace, n, weight) for n in trace.numbers),
                              f"uniform over {len(trace.steps)} steps")


@step_diagnoser("first-step", help="the log's first step")
class FirstStep(_Control):
    name = "first-step"

    def predict(self, trace: StepTrace) -> StepPrediction:
        if not trace.steps:
            return StepPrediction((), "an empty log")
        return StepPrediction((_at(trace, trace.first_step),), "the first step")


@step_diagnoser("last-step", help="the log's last step")
class LastStep(_Control):
    name = "last-step"

    def predict(self, trace: StepTrace) -> StepPrediction:
        if not trace.steps:
            return StepPrediction((), "an empty log")
        return StepPrediction((_at(trace, trace.numbers[-1]),), "the last step")

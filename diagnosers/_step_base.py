"""Diagnosers of step traces (multi-agent failure logs): the protocol and its registry.

A step diagnoser reads a `StepTrace` — never its labels — and names where the failure
began: the step (in the source's own numbering) and the agent. It answers with a
`StepPrediction`: one or more weighted (step, agent) guesses whose weights sum to 1 (a
point prediction is one guess of weight 1; `chance` spreads its weight uniformly over the
log, so its score is the analytic expectation of a uniform guess, not a seeded draw), or
none (it abstains). The scorer (`cuer_agent.studies.diagnose.steps`) compares guesses
with the labels; no diagnoser scores itself.

The built-in controls (`step_controls.py`) are `chance`, `first-step` and `last-step`;
each control's agent is the agent of the step it names. Replays of published judges
(`catchbench_replay.py`) register one diagnoser per saved prediction file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cuer_agent._registry import About, Registry
from cuer_agent.step_trace import StepTrace


@dataclass(frozen=True)
class Guess:
    step: int
    """In the source's own numbering."""
    agent: str
    """`agent_name` of the agent blamed."""
    weight: float = 1.0


@dataclass(frozen=True)
class StepPrediction:
    guesses: tuple[Guess, ...]
    """Weights summing to 1; empty: the diagnoser abstains on this log."""
    why: str = ""
    applies: bool = True
    """False: the log is outside the diagnoser's scope (a replay with no saved prediction
    for it): not scored, counted apart."""


class StepDiagnoser(Protocol):
    name: str
    control: bool
    """What any log would score (chance, a fixed position): set beside the diagnosers."""
    reads: str
    """What it reads, declared: "log" (the steps only), "log and ground truth" (a judge
    shown the task's answer), "saved predictions" (a replay)."""

    def predict(self, trace: StepTrace) -> StepPrediction: ...

    def not_run(self) -> str:
        """Why it cannot run here ("" when it can): a judge on a backend with no model."""
        ...


StepFactory = Callable[..., StepDiagnoser]
"""Makes a step diagnoser from the options a study passes (`skills`: the skill client)."""
STEP_ENTRY_POINT_GROUP = "cuer_agent.step_diagnosers"
STEP_DIAGNOSERS: Registry[StepFactory] = Registry(
    "step diagnoser", STEP_ENTRY_POINT_GROUP,
    builtins=("cuer_agent.diagnosers.step_controls", "cuer_agent.diagnosers.step_judge",
              "cuer_agent.diagnosers.catchbench_replay"))
"""Factories by name; a third party adds one through the entry-point group. The replays
register one name per saved prediction file found (`catchbench_replay`)."""


def step_diagnoser(name: str, *, help: str = "") -> Callable[[StepFactory], StepFactory]:
    """Register a step diagnoser's factory under `name` (one line per diagnoser)."""
    return STEP_DIAGNOSERS.register(name, About(help=help))


def get_step_diagnoser(name: str, **options: Any) -> StepDiagnoser:
    """A fresh instance of step diagnoser `name` (an unknown name: one ConfigError line);
    `options` are what a study offers (`skills`), each diagnoser takes what it needs."""
    return STEP_DIAGNOSERS.get(name)(**options)


def step_diagnoser_names() -> list[str]:
    """Every step diagnoser: the controls first, then the rest in name order."""
    names = STEP_DIAGNOSERS.names()
    controls = [n for n in ("chance", "first-step", "last-step") if n in names]
    return [*controls, *(n for n in names if n not in controls)]

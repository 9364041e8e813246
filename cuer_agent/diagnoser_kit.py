"""Conformance kit for diagnosers: `validate_diagnoser(diagnoser, cases)`.

Checks that any diagnoser — built in or third party —

* returns a well-formed `Diagnosis` (known stage, hop within 0..n+1, severity in [0, 1]);
* is deterministic: the same view and seed give the same diagnosis;
* never reads hidden labels it does not declare: its view carries the gold answer only
  if it declares `uses_gold`, and the kit relabels the gold answer *both* in the view
  and in the probe's correctness oracle — an output that changes when the view's gold is
  relabelled needs `uses_gold`, one that changes when the oracle's gold is relabelled
  needs `uses_gold_oracle`;
* declares the environment oracle it uses: the kit watches the probe, and a diagnoser
  that re-runs a hop against a clean tool (`ENVIRONMENT_CALLS`) must declare
  `uses_environment_oracle`.

`cases` are (trace, gold answer, probe factory or None) triples; a probe factory takes the
gold answer its oracle should compare with and makes a fresh probe per call, so probing
diagnosers can be checked too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cuer_agent.diagnosers import (
    ENVIRONMENT_CALLS,
    STAGES,
    Diagnoser,
    Diagnosis,
    Probe,
    make_view,
)
from cuer_agent.trace import Trace

Case = tuple[Trace, str, Callable[[str], Probe] | None]
RELABELLED = " (relabelled)"


@dataclass(frozen=True)
class ConformanceReport:
    checked: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


class WatchedProbe:
    """A probe that counts the calls that run a hop against a clean tool."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self.environment_calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._probe, name)
        if name not in ENVIRONMENT_CALLS:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.environment_calls += 1
            return attr(*args, **kwargs)
        return call


def _check_shape(diagnosis: object, trace: Trace) -> list[str]:
    if not isinstance(diagnosis, Diagnosis):
        return [f"returned {type(diagnosis).__name__}, not Diagnosis"]
    problems = []
    if diagnosis.stage not in STAGES:
        problems.append(f"unknown stage {diagnosis.stage!r}")
    if not 0 <= diagnosis.hop <= len(trace.hops) + 1:
        problems.append(f"hop {diagnosis.hop} outside 0..{len(trace.hops) + 1}")
    if not 0.0 <= diagnosis.severity <= 1.0:
        problems.append(f"severity {diagnosis.severity} outside [0, 1]")
    return problems


def validate_diagnoser(diagnoser: Diagnoser, cases: Sequence[Case],
                       seed: int = 0) -> ConformanceReport:
    problems: list[str] = []
    for i, (trace, gold, probe_factory) in enumerate(cases):
        if diagnoser.probing and probe_factory is None:
            continue

        watched: list[WatchedProbe] = []

        def run(view_gold: str, oracle_gold: str, trace: Trace = trace,
                probe_factory: Callable[[str], Probe] | None = probe_factory,
                watched: list[WatchedProbe] = watched) -> Diagnosis:
            probe = WatchedProbe(probe_factory(oracle_gold)) if probe_factory else None
            if probe is not None:
                watched.append(probe)
            return diagnoser.diagnose(make_view(diagnoser, trace, view_gold, seed), probe)

        view = make_view(diagnoser, trace, gold, seed)
        if not diagnoser.uses_gold and view.gold_answer is not None:
            problems.append(f"case {i}: gold answer in the view of a gold-free diagnoser")
        first = run(gold, gold)
        problems += [f"case {i}: {p}" for p in _check_shape(first, trace)]
        if _comparable(run(gold, gold)) != _comparable(first):
            problems.append(f"case {i}: not deterministic under seed {seed}")
        if (not diagnoser.uses_gold
                and _comparable(run(gold + RELABELLED, gold)) != _comparable(first)):
            problems.append(f"case {i}: result depends on the gold answer in the view, but "
                            "it declares uses_gold = False")
        if (probe_factory is not None and not diagnoser.uses_gold_oracle
                and _comparable(run(gold, gold + RELABELLED)) != _comparable(first)):
            problems.append(f"case {i}: result depends on the probe's gold oracle, but it "
                            "declares uses_gold_oracle = False")
        if (any(p.environment_calls for p in watched)
                and not getattr(diagnoser, "uses_environment_oracle", False)):
            problems.append(f"case {i}: its probe re-runs a hop against a clean tool "
                            f"({', '.join(ENVIRONMENT_CALLS)}), but it declares "
                            "uses_environment_oracle = False")
    return ConformanceReport(len(cases), tuple(problems))


def _comparable(d: Diagnosis) -> tuple[object, ...]:
    return (d.hop, d.stage, d.propagated, d.severity, d.cause)


from cuer_agent.agent_kit import AgentReport, validate_agent  # noqa: E402  (the agent kit)

__all__ = ["AgentReport", "ConformanceReport", "make_view", "validate_agent",
           "validate_diagnoser"]

"""The search both counterfactual probes share: the first hop whose repair fixes the run."""

from __future__ import annotations

from collections.abc import Callable

from cuer_agent.diagnosers._base import Diagnosis, Probe
from cuer_agent.trace import Trace


def first_fixing_hop(trace: Trace, probe: Probe, budget: int,
                     repair: Callable[[int], Trace | None], what: str) -> Diagnosis:
    """For j = 1..min(n, budget): `repair(j)` gives the repaired run (None: no repair
    possible); the first correct one blames hop j — stage `tool` if its hop j searched
    with a different sub-query, else `retrieval`. Then the continue-retrieving probe
    (success → hop n+1, premature termination); otherwise the answer level (hop 0)."""
    n = len(trace.hops)
    for j in range(1, min(n, budget) + 1):
        repaired = repair(j)
        if repaired is None or not probe.is_correct(repaired.answer):
            continue
        drifted = (len(repaired.hops) >= j
                   and repaired.hops[j - 1].subquery != trace.hops[j - 1].subquery)
        return Diagnosis(hop=j, stage="tool" if drifted else "retrieval", propagated=j < n,
                         cause=f"{what} hop {j} fixes it")
    if probe.is_correct(probe.continue_retrieving().answer):
        return Diagnosis(hop=n + 1, stage="answer", cause="one more hop fixes it")
    return Diagnosis(hop=0, stage="answer", severity=0.5, cause=f"no {what} fixes it")

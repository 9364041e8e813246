"""Control: a hop drawn uniformly from the trace's hops, seeded from the trace itself.

Its expected exact-hop accuracy is also computed analytically
(`cuer_agent.metrics.attribution.chance_expected_accuracy`).
"""

from __future__ import annotations

import numpy as np

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("chance", help="control: a seeded random hop",
           default_rank=15)
class Chance(BaseDiagnoser):
    control = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        n = max(1, len(view.trace.hops))
        rng = np.random.default_rng(view.stable_seed("chance"))
        return Diagnosis(hop=int(rng.integers(1, n + 1)), stage="retrieval",
                         cause=f"control: uniform over {n} hop(s)")

"""Control: always blames hop 1 (retrieval)."""

from __future__ import annotations

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("first-hop", help="control: always hop 1",
           default_rank=13)
class FirstHop(BaseDiagnoser):
    control = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        return Diagnosis(hop=1, stage="retrieval", propagated=len(view.trace.hops) > 1,
                         cause="control: always the first hop")

"""Control: always blames the trace's last hop (retrieval)."""

from __future__ import annotations

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("last-hop", help="control: always the last hop",
           default_rank=14)
class LastHop(BaseDiagnoser):
    control = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        return Diagnosis(hop=max(1, len(view.trace.hops)), stage="retrieval",
                         cause="control: always the last hop")

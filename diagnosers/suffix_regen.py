"""`suffix-regen`: repair hop j, keep hops < j, let the agent regenerate the rest.

The same loop as `frozen-hop` (j = 1..min(n, budget), first success is blamed, then the
continue-retrieving probe → n+1, else hop 0), but everything after hop j is regenerated
by the agent instead of kept frozen. Option `budget` (default 3).
"""

from __future__ import annotations

from cuer_agent.diagnosers._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("suffix-regen")
class SuffixRegen(BaseDiagnoser):
    probing = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, "suffix-regen needs a probe"
        trace = view.trace
        n = len(trace.hops)
        budget = int(self.options.get("budget", 3))
        for j in range(1, min(n, budget) + 1):
            regenerated = probe.regenerate_from(j)
            if probe.is_correct(regenerated.answer):
                drifted = (len(regenerated.hops) >= j and
                           regenerated.hops[j - 1].subquery != trace.hops[j - 1].subquery)
                return Diagnosis(hop=j, stage="tool" if drifted else "retrieval",
                                 propagated=j < n, cause=f"regenerating from hop {j} fixes it")
        if probe.is_correct(probe.continue_retrieving().answer):
            return Diagnosis(hop=n + 1, stage="answer", cause="one more hop fixes it")
        return Diagnosis(hop=0, stage="answer", severity=0.5, cause="no regeneration fixes it")

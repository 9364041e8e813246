"""`suffix-regen`: repair hop j, keep hops < j, let the agent regenerate the rest.

The same loop as `frozen-hop` (j = 1..min(n, budget), first success is blamed, then the
continue-retrieving probe → n+1, else hop 0), but everything after hop j is regenerated
by the agent instead of kept frozen — *under the fault as it held in the run*: only hop j
is repaired, so a regenerated suffix that asks the faulted sub-query again meets the
fault again, and regenerating from hop 1 is not a clean restart. Option `budget`
(default 3).
"""

from __future__ import annotations

from cuer_agent.diagnosers._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser
from cuer_agent.diagnosers._probing import first_fixing_hop


@diagnoser("suffix-regen")
class SuffixRegen(BaseDiagnoser):
    probing = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, "suffix-regen needs a probe"
        return first_fixing_hop(view.trace, probe, int(self.options.get("budget", 3)),
                                probe.regenerate_from, "regenerating from")

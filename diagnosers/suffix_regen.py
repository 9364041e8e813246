"""`suffix-regen` and `suffix-regen-free`: repair hop j, keep hops < j, let the agent
regenerate the rest.

The same loop as `frozen-hop` (j = 1..min(n, budget), first fix is blamed, then the
continue-retrieving probe → n+1, else hop 0), but everything after hop j is regenerated
by the agent instead of kept frozen — *under the fault as it held in the run*: only hop j
is repaired, so a regenerated suffix that asks the faulted sub-query again meets the
fault again, and regenerating from hop 1 is not a clean restart. Option `budget`
(default 3).

`suffix-regen` decides "fixed" with the probe's gold oracle (`uses_gold_oracle`);
`suffix-regen-free` from observable signals only (`_probing.supports_new_answer`).
"""

from __future__ import annotations

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser
from ._probing import Fixed, GoldFree, by_oracle, first_fixing_hop


@diagnoser("suffix-regen", help="probe: regenerate the run from a hop; gold oracle",
           default_rank=8)
class SuffixRegen(BaseDiagnoser):
    probing = True
    uses_gold_oracle = True
    uses_environment_oracle = True
    """Its repaired hop runs against a clean tool: it knows where the fault is."""

    def fixed(self, view: DiagnosisView, probe: Probe) -> Fixed:
        return by_oracle(probe)

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, f"{self.name} needs a probe"
        return first_fixing_hop(view.trace, probe, int(self.options.get("budget", 3)),
                                probe.regenerate_from, "regenerating from",
                                self.fixed(view, probe))


@diagnoser("suffix-regen-free", help="suffix-regen without the gold oracle",
           default_rank=9)
class SuffixRegenFree(GoldFree, SuffixRegen):
    """Gold-free: "fixed" from the agent's own verification and confidence."""

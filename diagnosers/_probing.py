"""The skeleton every counterfactual probe shares: the first hop whose repair fixes the run.

`ProbingDiagnoser` is that skeleton; a probe names only how it repairs hop j (`repair`)
and how its causes say so (`repairing`). `first_fixing_hop` is the search itself.

"Fixes" has two readings, and each probing diagnoser declares which it uses:

* **gold oracle** (`uses_gold_oracle = True`, as the published probes did): the repaired
  run's answer is correct against the gold answer (`probe.is_correct`);
* **gold-free** (`*-free`): from observable signals only — the repaired run answers
  something else than the failed run, the agent's own last verification supports the new
  answer, and the agent is at least as confident of it as of the answer it replaced
  (`supports_new_answer`). This is what a user without gold can run on their own agent.

Why relative confidence: with a fixed bar (0.5, the first version) the free probes never
named a hop — on `evaluate --hops 3 --n 60 --seed 4242` 0 of 516 injected failures —
because the agent's own confidence in its *correct* clean answers is mostly below it (58
of 60 clean runs). The agent preferring the repaired answer is its own signal, read from
its own scale.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from cuer_agent.interventions.repairs import reads_gold
from cuer_agent.metrics.answer import normalize_answer
from cuer_agent.trace import Trace

from ._base import BaseDiagnoser, DiagnoserOptions, Diagnosis, DiagnosisView, Probe, Stage

Fixed = Callable[[Trace], bool]
"""Does a repaired run count as fixed?"""




def by_oracle(probe: Probe) -> Fixed:
    """Fixed = correct against the gold answer (the probe's oracle)."""
    return lambda repaired: probe.is_correct(repaired.answer)


def supports_new_answer(observed: Trace, min_confidence: float | None = None) -> Fixed:
    """Fixed = a different, non-empty answer that the repaired run's last hop verified
    (supported or partial) and that it answers with a confidence at least the observed
    run's (or at least `min_confidence`, when given)."""
    before = normalize_answer(observed.answer)
    bar = (observed.confidence or 0.0) if min_confidence is None else min_confidence

    def fixed(repaired: Trace) -> bool:
        after = normalize_answer(repaired.answer)
        if repaired.status != "ok" or not after or after == before or not repaired.hops:
            return False
        verified = repaired.hops[-1].support in ("supported", "partial")
        return verified and (repaired.confidence or 0.0) >= bar
    return fixed


class GoldFree:
    """Mixin for a probing diagnoser: decide "fixed" from observable signals only
    (`supports_new_answer`; option `min_confidence`: a fixed bar instead of the observed
    run's own confidence)."""

    uses_gold_oracle: ClassVar[bool] = False
    options: DiagnoserOptions

    def fixed(self, view: DiagnosisView, probe: Probe) -> Fixed:
        bar = self.options.get("min_confidence")
        return supports_new_answer(view.trace, None if bar is None else float(bar))


REPAIR_STAGE: dict[str, Stage] = {"deeper": "retrieval", "gold-support": "retrieval",
                                  "reread": "tool", "replan": "tool"}
"""The stage a natural failure's repair names (another repair: `tool`). A re-read names
`tool`: the stages have no "read" of their own, and the reader is the agent's tool."""
NO_REPAIR_FIXES = "no single-hop repair fixes this run"
GOLD_REPAIR = "a gold oracle, and this probe is gold-free"


def first_fixing_hop(trace: Trace, probe: Probe, budget: int,
                     repair: Callable[[int, str | None], Trace | None], what: str,
                     fixed: Fixed, gold_free: bool = False) -> Diagnosis:
    """For j = 1..min(n, budget), and at each j every repair the probe tries (an injected
    fault: its own; a natural failure: `probe.repairs`, one not applicable skipped with its
    reason): `repair(j, r)` gives the repaired run (None: no repair possible); the first one
    `fixed` accepts blames hop j — on an injected fault stage `tool` if its hop j searched
    with a different sub-query, else `retrieval`; on a natural failure the repair's stage
    (`REPAIR_STAGE`). Then the continue-retrieving probe (fixed → hop n+1, premature
    termination); otherwise the answer level (hop 0) on an injected fault, and an
    abstention (stage `none`, `NO_REPAIR_FIXES`) on a natural failure. A `gold_free` probe
    makes no repair that is a gold oracle (`gold-support`)."""
    n = len(trace.hops)
    skipped: dict[str, str] = {}
    for j in range(1, min(n, budget) + 1):
        for r in probe.repairs or (None,):
            why = None if r is None else (GOLD_REPAIR if gold_free and reads_gold(r)
                                          else probe.not_applicable(r, j))
            if r is not None and why is not None:
                skipped.setdefault(r, why)
                continue
            repaired = repair(j, r)
            if repaired is None or not fixed(repaired):
                continue
            if r is not None:
                return Diagnosis(hop=j, stage=REPAIR_STAGE.get(r, "tool"), propagated=j < n,
                                 cause=f"{r} at hop {j} fixes it ({what})", repair=r)
            drifted = (len(repaired.hops) >= j
                       and repaired.hops[j - 1].subquery != trace.hops[j - 1].subquery)
            return Diagnosis(hop=j, stage="tool" if drifted else "retrieval",
                             propagated=j < n, cause=f"{what} hop {j} fixes it")
    if fixed(probe.continue_retrieving()):
        return Diagnosis(hop=n + 1, stage="answer", cause="one more hop fixes it")
    if probe.repairs:
        tried = ", ".join(r for r in probe.repairs if r not in skipped) or "none"
        cant = "".join(f"; {r} not applicable: {why}" for r, why in skipped.items())
        return Diagnosis(hop=0, stage="none", severity=0.0,
                         cause=f"{NO_REPAIR_FIXES} ({what}; tried {tried}{cant})")
    return Diagnosis(hop=0, stage="answer", severity=0.5, cause=f"no {what} fixes it")


class ProbingDiagnoser(ABC, BaseDiagnoser):
    """A counterfactual probe: for j = 1..min(n, budget) repair hop j (`repair`) and blame
    the first j whose repaired run is fixed (`first_fixing_hop`); option `budget`
    (default 3) caps the hops probed. "Fixed" is decided with the probe's gold oracle
    (`by_oracle`); mix `GoldFree` in first for the gold-free reading.

    A subclass gives `repair` and `repairing` (the verb its causes use: "<repairing> hop j
    fixes it", "no <repairing> fixes it")."""

    probing = True
    repairs_natural_failures = True
    uses_gold_oracle = True
    uses_environment_oracle = True
    """Its repaired hop runs against a clean tool: it knows where the fault is."""
    repairing: ClassVar[str]

    @abstractmethod
    def repair(self, probe: Probe, j: int, how: str | None = None) -> Trace | None:
        """The run with hop j repaired — by the fault's own repair (`how` None) or by the
        named repair — re-executed through `probe` (None: hop j cannot be repaired)."""

    def fixed(self, view: DiagnosisView, probe: Probe) -> Fixed:
        return by_oracle(probe)

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, f"{self.name} needs a probe"
        return first_fixing_hop(view.trace, probe, int(self.options.get("budget", 3)),
                                partial(self.repair, probe), self.repairing,
                                self.fixed(view, probe), gold_free=not self.uses_gold_oracle)

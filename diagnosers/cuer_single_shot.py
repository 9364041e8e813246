"""`cuer-single-shot`: single-shot CUE-R as a fault diagnoser — the baseline to beat.

What a user who only knows the single-shot CUE-R mode would conclude about where a
failure started: take the failed run's final answer context (every hop's selected
evidence), REMOVE each item the answer says it used, one at a time, and re-answer from
the rest — a frozen re-answer: only `answer` runs again, no hop is re-executed. The hop of
the item whose removal moves the answer most, by the CUE-R divergence D (0.5·Jaccard of
used ids + 0.3·answer changed + 0.2·|Δconfidence|), is blamed (ties: the earliest hop);
stage `retrieval`. With no used item it names the answer level (hop 0).

Gold-free; one answer call per used item (at most the probe budget), counted like any
probe's.
"""

from __future__ import annotations

from cuer_agent.metrics.utility import divergence
from cuer_agent.trace import HopRecord, Trace

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


def _hop_of(trace: Trace, evidence_id: str) -> HopRecord | None:
    """The hop that selected the item (else the first that retrieved it)."""
    for hop in trace.hops:
        if evidence_id in hop.selected:
            return hop
    return next((hop for hop in trace.hops if any(ev.id == evidence_id
                                                    for ev in hop.retrieved)), None)


def _without(hop: HopRecord, evidence_id: str) -> HopRecord:
    """The hop record with one item removed from what it retrieved and selected."""
    return hop.model_copy(update={
        "retrieved": tuple(ev for ev in hop.retrieved if ev.id != evidence_id),
        "selected": tuple(i for i in hop.selected if i != evidence_id)})


@diagnoser("cuer-single-shot", help="single-shot CUE-R as a diagnoser",
           default_rank=10)
class CuerSingleShot(BaseDiagnoser):
    probing = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, "cuer-single-shot needs a probe (it re-answers)"
        trace = view.trace
        best: tuple[float, int, str] | None = None  # (D, -hop, item)
        for item in trace.used_ids[:probe.budget]:
            hop = _hop_of(trace, item)
            if hop is None:
                continue
            again = probe.reanswer_with_hop(hop.hop, _without(hop, item))
            d = divergence(trace.used_ids, trace.answer, trace.confidence,
                           again.used_ids, again.answer, again.confidence)
            if best is None or (d, -hop.hop) > best[:2]:
                best = (d, -hop.hop, item)
        if best is None:
            return Diagnosis(hop=0, stage="answer", severity=0.5,
                             cause="the answer used no evidence to remove")
        d, neg_hop, item = best
        hop_no = -neg_hop
        return Diagnosis(hop=hop_no, stage="retrieval", propagated=hop_no < len(trace.hops),
                         severity=round(min(1.0, d), 4),
                         cause=f"removing {item} (hop {hop_no}) moves the answer most (D {d:.3f})")

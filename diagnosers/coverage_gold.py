"""`coverage-gold`: the propagation study's coverage diagnoser (uses the gold answer).

If the answer is correct → stage none, hop 0. Otherwise the earliest hop whose
token-Jaccard overlap between the gold answer and the hop's concatenated documents is
below 0.05 (config `threshold`); if none → answer stage, hop 0. (With whole documents the
Jaccard overlap is almost always tiny, so this tends to blame hop 1 — as the study found.)
"""

from __future__ import annotations

from cuer_agent.metrics import recall_correct
from cuer_agent.retrieval import tokenize

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("coverage-gold", help="coverage that reads the gold answer",
           default_rank=3)
class CoverageGold(BaseDiagnoser):
    uses_gold = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        gold = view.gold_answer or ""
        trace = view.trace
        if recall_correct(trace.answer, [gold]):
            return Diagnosis(hop=0, stage="none", severity=0.0, cause="answer is correct")
        threshold = float(self.options.get("threshold", 0.05))
        answer_words = set(tokenize(gold))
        for hop in trace.hops:
            doc_words = {w for ev in hop.retrieved for w in tokenize(ev.text)}
            union = answer_words | doc_words
            jaccard = len(answer_words & doc_words) / len(union) if union else 0.0
            if jaccard < threshold:
                return Diagnosis(hop=hop.hop, stage="retrieval",
                                 propagated=hop.hop < len(trace.hops),
                                 cause=f"gold-answer Jaccard {jaccard:.3f} < {threshold}")
        return Diagnosis(hop=0, stage="answer", cause="every hop overlaps the gold answer")

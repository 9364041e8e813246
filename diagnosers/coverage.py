"""`coverage`: gold-free evidence sufficiency, in Doctor-RAG's spirit (paper-notes §C).

Per hop: how much of the hop's sub-query the selected evidence covers (content words),
and how much of the final answer all selected evidence covers. The coverage gate decides
which stages are possible: when every hop is covered (>= `hop_threshold`, default 0.5)
and the answer is grounded, only the answer stage remains (hop 0). Otherwise the earliest
hop that falls short is blamed: stage `tool` when its sub-query itself strayed from the
question and the earlier findings (content-word overlap < `drift_threshold`, 0.2), else
`retrieval`. A grounded-looking trace whose answer is not covered → answer stage.
"""

from __future__ import annotations

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, Stage, diagnoser
from ._evidence import coverage, selected_texts


@diagnoser("coverage", help="gold-free: how much of each hop the evidence covers",
           default_rank=2)
class Coverage(BaseDiagnoser):
    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        trace = view.trace
        hop_threshold = float(self.options.get("hop_threshold", 0.5))
        drift_threshold = float(self.options.get("drift_threshold", 0.2))
        context = trace.question
        for hop in trace.hops:
            texts = selected_texts(hop)
            covered = coverage(hop.subquery, texts) if texts else 0.0
            if covered < hop_threshold or not hop.finding:
                on_topic = coverage(hop.subquery, [context])
                stage: Stage = "tool" if on_topic < drift_threshold else "retrieval"
                return Diagnosis(hop=hop.hop, stage=stage, propagated=hop.hop < len(trace.hops),
                                 severity=round(1.0 - covered, 4),
                                 cause=f"sub-query coverage {covered:.2f}")
            context += " " + hop.finding
        evidence = [t for hop in trace.hops for t in selected_texts(hop)]
        answer_cov = coverage(trace.answer, evidence) if trace.answer.strip() else 0.0
        return Diagnosis(hop=0, stage="answer", severity=round(1.0 - answer_cov, 4),
                         cause=f"evidence sufficient; answer coverage {answer_cov:.2f}")

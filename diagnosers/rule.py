"""Control: ordered post-hoc checks on the observable trace (paper-notes §B, gold-free).

1. a hop retrieved nothing → retrieval, the earliest such hop;
2. the agent never searched → tool, hop 1;
3. the answer is empty → answer, hop 0;
4. the answer is not grounded (its words are not in any selected evidence) → answer, hop 0;
5. otherwise → answer, hop 0 (the rule cannot tell more without gold).
"""

from __future__ import annotations

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser
from ._evidence import coverage, selected_texts


@diagnoser("rule", help="control: ordered post-hoc checks of the trace",
           default_rank=11)
class Rule(BaseDiagnoser):
    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        trace = view.trace
        for hop in trace.hops:
            if not hop.retrieved:
                return Diagnosis(hop=hop.hop, stage="retrieval",
                                 propagated=hop.hop < len(trace.hops),
                                 cause="empty retrieval")
        if not trace.hops:
            return Diagnosis(hop=1, stage="tool", cause="no search was made")
        if not trace.answer.strip():
            return Diagnosis(hop=0, stage="answer", cause="empty answer")
        evidence = [t for hop in trace.hops for t in selected_texts(hop)]
        if coverage(trace.answer, evidence) < 1.0:
            return Diagnosis(hop=0, stage="answer", cause="answer not grounded in evidence")
        return Diagnosis(hop=0, stage="answer", severity=0.5, cause="no rule fired")

"""Control `trace-rule`: what the agent's own trace already says, and nothing more.

1. the first hop that the agent retried, or whose (last) attempt VERIFY found
   unsupported or that selected nothing → that hop, stage `retrieval`;
2. otherwise, when the trace took fewer hops than the agent's configured hop budget
   (`view.hop_budget`; unknown for foreign traces) → hop n+1, premature termination;
3. otherwise the answer level (hop 0): it abstains.

A gold-free diagnoser that does not beat it has learned nothing the agent did not
already say about itself: the report sets it beside every accuracy table.
"""

from __future__ import annotations

from cuer_agent.trace import attempt_failed

from ._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("trace-rule", help="control: what the agent's own trace flags",
           default_rank=12)
class TraceRule(BaseDiagnoser):
    control = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        trace = view.trace
        n = len(trace.hops)
        for hop in trace.hops:
            if hop.attempts or attempt_failed(hop.support, hop.selected):
                why = "the agent retried it" if hop.attempts else "VERIFY found it unsupported"
                return Diagnosis(hop=hop.hop, stage="retrieval", propagated=hop.hop < n,
                                 cause=f"control: {why}")
        if view.hop_budget is not None and n < view.hop_budget:
            return Diagnosis(hop=n + 1, stage="answer",
                             cause=f"control: stopped after {n} of {view.hop_budget} hops")
        return Diagnosis(hop=0, stage="answer", severity=0.5,
                         cause="control: the trace flags nothing")

"""`frozen-hop`: the propagation-aware counterfactual probe (paper-notes §B).

For j = 1..min(n, budget): re-execute hop j cleanly, keep every other hop as observed,
and re-answer; the first j whose repair flips the answer to correct is blamed (stage
`tool` if the repaired hop searched with a different sub-query, else `retrieval`). If
none does, a "continue retrieving" probe lets the agent take one more hop: success →
hop n+1 (premature termination, stage `answer`). Otherwise the answer level (hop 0).
Option `budget` (default 3) caps the hops probed.
"""

from __future__ import annotations

from cuer_agent.diagnosers._base import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser


@diagnoser("frozen-hop")
class FrozenHop(BaseDiagnoser):
    probing = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis:
        assert probe is not None, "frozen-hop needs a probe"
        trace = view.trace
        n = len(trace.hops)
        budget = int(self.options.get("budget", 3))
        for j in range(1, min(n, budget) + 1):
            repaired = probe.rerun_hop(j)
            if repaired is None:
                continue
            answer = probe.reanswer_with_hop(j, repaired).answer
            if probe.is_correct(answer):
                drifted = repaired["subquery"] != trace.hops[j - 1].subquery
                return Diagnosis(hop=j, stage="tool" if drifted else "retrieval",
                                 propagated=j < n, cause=f"repairing hop {j} alone fixes it")
        if probe.is_correct(probe.continue_retrieving().answer):
            return Diagnosis(hop=n + 1, stage="answer", cause="one more hop fixes it")
        return Diagnosis(hop=0, stage="answer", severity=0.5, cause="no single repair fixes it")

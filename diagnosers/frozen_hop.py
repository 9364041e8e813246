"""`frozen-hop` and `frozen-hop-free`: the propagation-aware counterfactual probe
(paper-notes §B).

For j = 1..min(n, budget): re-execute hop j with hop j repaired (its tools clean: the
run's fault, if any, does not hold there), keep every other hop as observed, and
re-answer; the first j whose repair fixes the run is blamed (stage `tool` if the repaired
hop searched with a different sub-query, else `retrieval`). If none does, a "continue
retrieving" probe lets the agent take one more hop: fixed → hop n+1 (premature
termination, stage `answer`). Otherwise the answer level (hop 0). Option `budget`
(default 3) caps the hops probed.

`frozen-hop` decides "fixed" with the probe's gold oracle, as the published probe did
(`uses_gold_oracle`); `frozen-hop-free` from observable signals only
(`_probing.supports_new_answer`: a new, verified answer the agent is at least as
confident of).
"""

from __future__ import annotations

from cuer_agent.trace import Trace

from ._base import Probe, diagnoser
from ._probing import GoldFree, ProbingDiagnoser


@diagnoser("frozen-hop", help="probe: re-run one hop, keep the rest; gold oracle",
           default_rank=6)
class FrozenHop(ProbingDiagnoser):
    repairing = "repairing"

    def repair(self, probe: Probe, j: int, how: str | None = None) -> Trace | None:
        """Hop j re-run repaired (a clean tool, or the repair `how`), every other hop as
        observed, re-answered."""
        record = probe.rerun_hop(j, how)
        return None if record is None else probe.reanswer_with_hop(j, record)


@diagnoser("frozen-hop-free", help="frozen-hop without the gold oracle",
           default_rank=7)
class FrozenHopFree(GoldFree, FrozenHop):
    """Gold-free: "fixed" from the agent's own verification and confidence."""

"""Faults as conditions of the run's tools: how long a fault at hop h holds.

A fault is not a one-time edit of a saved state but a condition in the run's context
(`cuer_agent.graphs.state.Condition`), consulted by the agent's nodes every time they
retrieve or issue a sub-query:

* `corpus` (the default) — a retrieval fault is a state of the corpus from hop h on
  (`cuer_agent.interventions.corpus`): passages withheld, added or edited in the index,
  and every search answered by the same retriever over it. Query drift and early
  termination are faults of the agent's own action, not of the world: they hold as
  under `query`.
* `query` — a retrieval fault returns the faulty result whenever hop h's
  faulted sub-query is asked again (same words, any order), at any hop; a reformulated
  sub-query gets clean retrieval. Query drift corrupts the sub-query of hop h's first
  attempt only; the agent's own retry is not corrupted. Early termination: the hop
  budget is h−1.
* `hop` — every retrieval at hop h is faulty (the fault re-applied to whatever is
  asked), and every attempt's sub-query at hop h drifts: unrecoverable by design.
  Early termination as under `query`.
* `once` — the old one-shot snapshot edit, for comparison: no condition, nothing holds
  after the fork (a retry of the same query meets a clean retriever; probes restore the
  clean run).

"Same words" is the retriever's own view of a query: its token multiset
(`query_key`), since a bag-of-words retriever cannot tell reorderings apart.

A probe repairs hop j with `repaired(j)`: at hop j the tools are clean (the faulted
query there gets clean retrieval, the sub-query is not corrupted, a budget cut below j
is lifted), and everywhere else the fault holds as it did in the run — so regenerating
a suffix that asks the faulted query again meets the fault again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from cuer_agent.interventions._fault_types import FaultInput, FaultOutcome, FaultSpec
from cuer_agent.interventions.corpus import CorpusCondition, query_key
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Evidence

Persistence = Literal["corpus", "query", "hop", "once"]
PERSISTENCES: tuple[str, ...] = ("corpus", "query", "hop", "once")
EvidenceFault = Callable[[str, list[Evidence]], list[Evidence] | None]
"""(query asked, clean evidence for it) -> the faulty evidence (None: the fault cannot
apply to this query, so the clean evidence stands)."""


@dataclass(frozen=True)
class FaultCondition:
    """A fault at hop `hop` held under `persistence` (see the module docstring)."""

    hop: int
    persistence: Persistence
    faulted_query: str = ""
    """Hop h's sub-query in the clean run (first attempt): the query the fault is keyed to."""
    evidence_fault: EvidenceFault | None = None
    drift: Callable[[str], str] | None = None
    """Planned sub-query -> the corrupted one (query drift)."""
    budget_cap: int | None = None
    """Hop budget under a forced early stop (h−1)."""
    repaired_hops: frozenset[int] = frozenset()
    _memo: dict[tuple[str, ...], list[Evidence] | None] = field(
        default_factory=dict, compare=False, repr=False)

    def issue(self, hop: int, attempt: int, planned: str) -> str:
        if (self.drift is None or hop != self.hop or hop in self.repaired_hops
                or (attempt > 1 and self.persistence != "hop")):
            return planned
        return self.drift(planned)

    def retrieve(self, retriever: Retriever, hop: int, query: str, k: int) -> list[Evidence]:
        def clean() -> list[Evidence]:
            return list(retriever.retrieve(query, k))

        if self.evidence_fault is None or hop in self.repaired_hops or not self._hits(hop, query):
            return clean()
        key = query_key(query)
        evidence = None
        if key not in self._memo:  # the same question always gets the same faulty answer
            evidence = clean()
            self._memo[key] = self.evidence_fault(query, evidence)
        faulty = self._memo[key]
        if faulty is not None:  # a remembered faulty answer: no clean retrieval needed
            return list(faulty)
        return evidence if evidence is not None else clean()

    def reading(self, hop: int) -> int:
        return 0  # a fault changes what the tools return, never how the reader reads

    def hop_budget(self, budget: int) -> int:
        if self.budget_cap is None or any(h > self.budget_cap for h in self.repaired_hops):
            return budget
        return min(budget, self.budget_cap)

    def repaired(self, hop: int) -> FaultCondition:
        return dataclasses.replace(self, repaired_hops=self.repaired_hops | {hop},
                                   _memo=self._memo)  # shared: one answer per question

    def _hits(self, hop: int, query: str) -> bool:
        if self.persistence == "hop":
            return hop == self.hop
        return query_key(query) == query_key(self.faulted_query)


def held_as(spec: FaultSpec, persistence: Persistence,
            outcome: FaultOutcome | None = None) -> Persistence:
    """How a fault is held under a study's persistence: `corpus` applies to retrieval
    faults that say how they change the corpus (`FaultOutcome.corpus`); a fault of the
    agent's own action (query drift, early termination), or a plug-in fault that gives
    no corpus edit, is then held as under `query`."""
    if persistence != "corpus":
        return persistence
    if spec.boundary != "retrieve" or (outcome is not None and outcome.corpus is None):
        return "query"
    return "corpus"


def fault_condition(spec: FaultSpec, inp: FaultInput, persistence: Persistence,
                    outcome: FaultOutcome | None = None) -> FaultCondition | CorpusCondition:
    """The condition that holds fault `spec` at hop `inp.hop` (not for `once`).
    `outcome`: `spec.apply(inp)`, when the caller has it — the answer to hop h's own
    sub-query (whose clean evidence is `inp.evidence`), so it is not computed again."""
    if persistence == "corpus" and spec.boundary == "retrieve" and outcome is None:
        outcome = spec.apply(inp)
    persistence = held_as(spec, persistence, outcome)
    if persistence == "corpus":
        assert outcome is not None and outcome.corpus is not None
        return CorpusCondition(inp.hop, outcome.corpus)
    if spec.boundary == "read":  # early termination: no hop h
        return FaultCondition(inp.hop, persistence, budget_cap=inp.hop - 1)
    if spec.boundary == "plan":
        def drift(planned: str) -> str:
            out = spec.apply(dataclasses.replace(inp, subquery=planned))
            return out.subquery if out.applied and out.subquery else planned
        return FaultCondition(inp.hop, persistence, faulted_query=inp.subquery, drift=drift)

    def evidence_fault(query: str, clean: list[Evidence]) -> list[Evidence] | None:
        out = spec.apply(dataclasses.replace(inp, subquery=query, evidence=clean))
        return out.evidence if out.applied else None
    memo = ({} if outcome is None else
            {query_key(inp.subquery): outcome.evidence if outcome.applied else None})
    return FaultCondition(inp.hop, persistence, faulted_query=inp.subquery,
                          evidence_fault=evidence_fault, _memo=memo)


def edit_condition(hop: int, subquery: str, edited: list[Evidence]) -> FaultCondition:
    """A CUE-R operator's edit of hop `hop`'s evidence, keyed to the sub-query it hit."""
    return FaultCondition(hop, "query", faulted_query=subquery,
                          evidence_fault=lambda _query, _clean: edited)

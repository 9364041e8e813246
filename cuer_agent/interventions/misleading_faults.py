"""Misleading faults at hop h: the world holds a passage that states hop h's fact with
another value, beside the passages that state it truly. Pure functions `(FaultInput) ->
FaultOutcome`, registered with their stage label and fork boundary (see
`cuer_agent.interventions._fault_types`); the faults that take evidence away or cut the
run short are in `cuer_agent.interventions.structural_faults`.

| name | stage | boundary | the passage added to the corpus |
|---|---|---|---|
| `conflicting_evidence` | retrieval | retrieve | the fact with a confuser's value |
| `stale_evidence` | retrieval | retrieve | the fact with an outdated value |

(`conflicting_evidence` was called `false_premise`: the source study put "a passage
asserting the premise is false" in front of the evidence, a sentence no passage of a
world writes; configs naming the old name get this fault.)

**Where the passage comes from.** Never from a template:

* the synthetic world writes it with its own passage generator from a counterfactual
  fact (`FactSource.counterfactual`): same entity and relation, another value — for
  *conflicting* evidence the value a family sibling has (the confusion a real corpus
  holds), for *stale* evidence a shifted year, a scaled population or another entity of
  the type — in a paragraph drawn as the world draws every paragraph (title, opening,
  sentence forms, fillers, length), under the id the article's next paragraph gets;
* a real data set has no generator: the passage is a minimal certified edit of the
  fact's passage in view (`tampering.certified_swap` on that one passage: answer fact,
  else bridge entity, else a salient span), indexed as the title's next paragraph. On
  real data the two faults differ only in their seeds.

Under persistence `corpus` the passage is indexed (`CorpusEdit.added`) and ranked by the
same retriever for every query from hop h on; hop h's evidence is what that retriever
returns for its sub-query (the passage may not reach the top k: the record still says
what was added, and the study reports the hop at which it first entered view).

**Skips**: ``"empty evidence"`` when hop h retrieved nothing; ``"fact not in view"``
when no passage in view states hop h's fact (nothing to contradict); ``"nothing
certifiable"`` / ``"no distractor"`` (real data) when the fact's passage has no span to
edit.

Seeded as every fault is (``seeded_rng(seed, example_id, hop, fault name)``); inputs
never mutated. The record's `new_ids` and `provenance` (hidden labels) name the added
passage and where it came from.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from cuer_agent.interventions._fault_types import (
    FaultInput,
    FaultOutcome,
    fact_params,
    fault_record,
    view_of,
)
from cuer_agent.interventions.corpus import CorpusEdit
from cuer_agent.interventions.facts import Kind
from cuer_agent.interventions.structural_faults import (
    SKIP_FACT_NOT_IN_VIEW,
    evidence_fault,
    skip,
)
from cuer_agent.interventions.tampering import Swap, certified_swap
from cuer_agent.trace import Evidence, evidence_id

__all__ = ["conflicting_evidence", "next_paragraph", "stale_evidence"]

RENAMED = {"false_premise": "conflicting_evidence"}
"""Old fault names a config may still use → the fault they mean now."""


def next_paragraph(title: str, taken: Any, max_paragraph: int) -> int:
    """The paragraph number a new paragraph of `title` gets: one past the largest the
    title uses among `taken` ids (0 when it has none)."""
    used = [p for p in range(max_paragraph + 1) if evidence_id(title, p, 0) in taken]
    return max(used) + 1 if used else 0


def _fact_passage(inp: FaultInput) -> Evidence | None:
    """The passage in view that states hop h's fact (selected first), or — with no gold
    fact — the item hop h selected."""
    selected = {str(i) for i in inp.selected}
    if inp.fact is None:
        return next((ev for ev in inp.evidence if ev.id in selected), None)
    states = set(inp.fact.passage_ids)
    stating = [ev for ev in inp.evidence if ev.id in states]
    stating.sort(key=lambda ev: ev.id not in selected)
    return stating[0] if stating else None


def _counterfactual(inp: FaultInput, name: str, kind: Kind,
                    rng: np.random.Generator) -> FaultOutcome:
    source = _fact_passage(inp)
    if source is None:
        return skip(inp, name, SKIP_FACT_NOT_IN_VIEW, params=fact_params(inp))
    written = (inp.facts.counterfactual(inp.fact, kind, rng, inp.seed, inp.example_id, inp.hop)
               if inp.facts is not None and inp.fact is not None else None)
    title = source.title
    taken = {*inp.known_ids, *(ev.id for ev in inp.evidence)}
    if written is not None:
        paragraph = written.paragraph
        while evidence_id(title, paragraph, 0) in taken:
            paragraph += 1
        item = Evidence(id=evidence_id(written.title, paragraph, 0), title=written.title,
                        text=written.text)
        origin, params = f"world:{kind}", {"strategy": "world", "value": written.value,
                                           "original_value": written.original}
    else:
        swap = certified_swap(dataclasses.replace(inp, evidence=[source]), rng)
        if not isinstance(swap, Swap):
            reason, found = swap
            return skip(inp, name, reason, params={**found, **fact_params(inp)})
        paragraph = next_paragraph(title, taken, inp.max_paragraph + 1)
        item = Evidence(id=evidence_id(title, paragraph, 0), title=title,
                        text=swap.edited[source.id].text)
        origin, params = source.id, {"strategy": f"edit:{swap.strategy}",
                                             "value": swap.new, "original_value": swap.original}
    corpus = CorpusEdit(added=(item,))
    stating = [ev.id for ev in inp.evidence
               if inp.fact is not None and ev.id in inp.fact.passage_ids]
    record = fault_record(inp, name, target_ids=(source.id,), target_titles=(title,),
                          new_ids=(item.id,), provenance={item.id: origin},
                          params={**params, "text": item.text, "contradicts": stating,
                                  **fact_params(inp)})
    return FaultOutcome(record=record, evidence=view_of(inp, corpus), corpus=corpus)


@evidence_fault("conflicting_evidence", help="a passage contradicting hop h's fact is added",
                default_rank=4)
def conflicting_evidence(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """A passage stating hop h's fact with a confuser's value joins the corpus."""
    return _counterfactual(inp, "conflicting_evidence", "conflicting", rng)


@evidence_fault("stale_evidence", help="an outdated version of hop h's fact is added",
                default_rank=5)
def stale_evidence(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """A passage stating hop h's fact with an outdated value joins the corpus."""
    return _counterfactual(inp, "stale_evidence", "stale", rng)

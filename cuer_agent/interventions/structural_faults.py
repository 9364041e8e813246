"""Structural faults at hop h: the evidence or the sub-query is taken away, swapped or cut
short. Pure functions `(FaultInput) -> FaultOutcome`, registered with their stage label
and fork boundary (see `cuer_agent.interventions._fault_types`); the faults that put a
contradicting passage into the world instead are in
`cuer_agent.interventions.misleading_faults`.

| name | stage | boundary | what it does to hop h |
|---|---|---|---|
| `empty_retrieval` | retrieval | retrieve | fact withheld; the sub-query returns nothing |
| `irrelevant_evidence` | retrieval | retrieve | fact withheld; hop h sees what else is found |
| `query_drift` | tool | plan | sub-query's entity → an off-topic passage's title |
| `early_termination` | answer | read | answer forced from the hops before h |

**Withheld** means the passages hop h read its fact from in the clean run: the items its
first attempt selected that state hop h's gold fact (`FaultInput.fact`), else every item
in view stating it, else — with no gold fact — the selected items. They leave the index
(`CorpusEdit.withheld`); the fact's other statements stay, so whether it can be found
elsewhere is a property of the world (`world.redundancy`), and finding it is the
agent's. What hop h then sees is what the same retriever returns without them: real
passages, same-name and same-relation neighbours a lexical retriever would plausibly
return — never a filtered or written passage.

**Off-topic** (query drift's new topic): no content word of the passage is a content
word of the question, of hop h's sub-query, of a later clean sub-query, or of a gold
answer, and the passage is not already in view. Off-topic passages are drawn from
`FaultInput.corpus` by bounded rejection sampling and, only if that finds too few, a
scan from a random offset — so a 1M-passage corpus is not scanned in the common case.

**Skips** (`record.skipped`, nothing returned to apply): ``"empty evidence"`` when hop h
retrieved nothing; ``"fact not in view"`` (withholding) when hop h's clean evidence held
no passage stating its fact; ``"no off-topic passage"`` (query drift) when the corpus
has too few off-topic passages; ``"empty sub-query"`` (query drift) when the sub-query
has no word to work on.

All randomness comes from ``seeded_rng(seed, example_id, hop, fault name)``: the same
input gives the same outcome in any process. Inputs (evidence, corpus) are never mutated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from cuer_agent.interventions._fault_types import (
    CorpusItem,
    FaultInput,
    FaultOutcome,
    fact_params,
    fault,
    fault_record,
    view_of,
)
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.interventions._text import content_words, has_words, topic
from cuer_agent.interventions.corpus import CorpusEdit, query_key

__all__ = [
    "SKIP_EMPTY_EVIDENCE",
    "SKIP_EMPTY_SUBQUERY",
    "SKIP_FACT_NOT_IN_VIEW",
    "SKIP_NO_OFF_TOPIC",
    "drifted_outcome",
    "early_termination",
    "empty_retrieval",
    "evidence_fault",
    "irrelevant_evidence",
    "query_drift",
    "skip",
    "withheld_ids",
]

SKIP_EMPTY_EVIDENCE = "empty evidence"
SKIP_NO_OFF_TOPIC = "no off-topic passage"
SKIP_EMPTY_SUBQUERY = "empty sub-query"
SKIP_FACT_NOT_IN_VIEW = "fact not in view"


def skip(inp: FaultInput, name: str, reason: str, **fields: object) -> FaultOutcome:
    """The outcome of a fault that cannot apply: a record saying why, nothing to apply."""
    return FaultOutcome(record=fault_record(inp, name, skipped=reason, **fields))


def evidence_fault(name: str, *, help: str = "", default_rank: int | None = None
                   ) -> Callable[[Callable[[FaultInput, np.random.Generator],
                                                    FaultOutcome]],
                                          Callable[[FaultInput], FaultOutcome]]:
    """Register a fault on hop h's evidence (stage retrieval, boundary retrieve) under
    `name`: skipped with ``"empty evidence"`` when hop h retrieved nothing, else applied
    with its ``seeded_rng(seed, example_id, hop, name)``."""
    def deco(func: Callable[[FaultInput, np.random.Generator], FaultOutcome]
             ) -> Callable[[FaultInput], FaultOutcome]:
        @fault(name, stage="retrieval", boundary="retrieve", help=help,
               default_rank=default_rank)
        @functools.wraps(func)
        def apply(inp: FaultInput) -> FaultOutcome:
            if not inp.evidence:
                return skip(inp, name, SKIP_EMPTY_EVIDENCE)
            return func(inp, seeded_rng(inp.seed, inp.example_id, inp.hop, name))
        return apply
    return deco


# --- off-topic passages ----------------------------------------------------------------

def _topic_words(inp: FaultInput) -> set[str]:
    """Words an off-topic passage must not contain: question, sub-query, later sub-queries,
    gold answers."""
    words = content_words(inp.question) | content_words(inp.subquery)
    for text in (*inp.later_subqueries, *inp.gold_answers):
        words |= content_words(text)
    return words


def _off_topic(inp: FaultInput, rng: np.random.Generator, n: int,
               exclude_ids: set[str]) -> tuple[list[CorpusItem], dict[str, object]]:
    """`n` distinct off-topic corpus passages (fewer if the corpus has fewer).

    Bounded rejection sampling first (O(n) checks when off-topic passages are common), then
    a scan from a random offset over the passages not yet checked.
    """
    corpus = inp.corpus
    banned = _topic_words(inp)
    chosen: list[CorpusItem] = []
    chosen_ids: set[str] = set()
    checked: set[int] = set()

    def take(index: int) -> None:
        checked.add(index)
        item = corpus[index]
        if item.id in exclude_ids or item.id in chosen_ids:
            return
        words = content_words(f"{item.title} {item.text}")
        if words and content_words(item.title) and banned.isdisjoint(words):
            chosen.append(item)
            chosen_ids.add(item.id)

    size = len(corpus)
    if size == 0 or n <= 0:
        return [], {"method": "none", "checked": 0}
    for index in rng.integers(0, size, size=32 * n + 64).tolist():
        if len(chosen) >= n:
            break
        if index not in checked:
            take(index)
    method = "rejection"
    if len(chosen) < n:
        method = "rejection+scan"
        offset = int(rng.integers(size))
        for step in range(size):
            if len(chosen) >= n:
                break
            index = (offset + step) % size
            if index not in checked:
                take(index)
    return chosen, {"method": method, "checked": len(checked)}


# --- the faults --------------------------------------------------------------------------

def withheld_ids(inp: FaultInput) -> tuple[str, ...]:
    """The passages hop h read its fact from (module docstring), in view order."""
    in_view = [ev.id for ev in inp.evidence]
    selected = {str(i) for i in inp.selected}
    if inp.fact is None:
        return tuple(i for i in in_view if i in selected)
    states = set(inp.fact.passage_ids)
    read = tuple(i for i in in_view if i in states and i in selected)
    return read or tuple(i for i in in_view if i in states)


def _withholding(inp: FaultInput, name: str, *, blank: bool) -> FaultOutcome:
    withheld = withheld_ids(inp)
    if not withheld:
        return skip(inp, name, SKIP_FACT_NOT_IN_VIEW, params=fact_params(inp))
    corpus = CorpusEdit(withheld=frozenset(withheld),
                        blank=frozenset({query_key(inp.subquery)}) if blank else frozenset())
    evidence = [] if blank else view_of(inp, corpus)
    new_ids = tuple(ev.id for ev in evidence if ev.id not in {e.id for e in inp.evidence})
    titles = {ev.id: ev.title for ev in inp.evidence}
    record = fault_record(
        inp, name, target_ids=withheld, target_titles=tuple(titles[i] for i in withheld),
        new_ids=new_ids, provenance={i: i for i in new_ids},
        params={"withheld": len(withheld), **fact_params(inp)})
    return FaultOutcome(record=record, evidence=evidence, corpus=corpus)


@evidence_fault("empty_retrieval", help="hop h retrieves nothing", default_rank=1)
def empty_retrieval(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """The passages hop h read its fact from are withheld, and its sub-query returns
    nothing (a search that comes back empty)."""
    return _withholding(inp, "empty_retrieval", blank=True)


@evidence_fault("irrelevant_evidence", help="off-topic passages replace hop h's evidence",
                default_rank=2)
def irrelevant_evidence(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """The passages hop h read its fact from are withheld: hop h sees what else the same
    retriever finds for its sub-query."""
    return _withholding(inp, "irrelevant_evidence", blank=False)


@fault("query_drift", stage="tool", boundary="plan", help="hop h's sub-query drifts",
       default_rank=3)
def query_drift(inp: FaultInput) -> FaultOutcome:
    """Hop h's sub-query drifts off-topic: its entity/topic is replaced by the title of an
    off-topic corpus passage, keeping the question form."""
    name = "query_drift"
    if not has_words(inp.subquery):
        return skip(inp, name, SKIP_EMPTY_SUBQUERY)
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    exclude = {ev.id for ev in inp.evidence}
    picked, how = _off_topic(inp, rng, 1, exclude)
    if not picked:
        return skip(inp, name, SKIP_NO_OFF_TOPIC, params=how)
    source = picked[0]
    title = " ".join(source.title.split())
    span, strategy = topic(inp.subquery)
    if span is None:  # words but no content word ("Who is it?"): ask about the title
        drifted, replaced, strategy = f"{inp.subquery.rstrip(' ?')} {title}?", "", "append"
    else:
        drifted = inp.subquery[:span.start] + title + inp.subquery[span.end:]
        replaced = span.text
    return drifted_outcome(inp, name, replaced, drifted, title, drift_source_id=source.id,
                           strategy=strategy, **how)


def drifted_outcome(inp: FaultInput, name: str, replaced: str, subquery: str, new_topic: str,
                    **how: object) -> FaultOutcome:
    """The outcome of a drift of hop h's sub-query to `subquery` (`replaced`: the span it
    took out, "" for none; `new_topic`: what it asks about now), as every drift records
    it."""
    record = fault_record(
        inp, name, target_titles=(replaced,) if replaced else (),
        params={"original_subquery": inp.subquery, "drifted_subquery": subquery,
                "replaced_span": replaced, "drift_title": new_topic, **how})
    return FaultOutcome(record=record, subquery=subquery)


@fault("early_termination", stage="answer", boundary="read",
       help="the agent answers after hop h-1", default_rank=6)
def early_termination(inp: FaultInput) -> FaultOutcome:
    """The agent is forced to answer from the hops before h (fork after read of hop h−1)."""
    return FaultOutcome(record=fault_record(inp, "early_termination",
                                            params={"answer_from_hops": inp.hop - 1}),
                        force_answer=True)

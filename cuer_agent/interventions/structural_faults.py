"""Structural faults at hop h: the evidence or the sub-query is taken away, swapped or cut
short. Pure functions `(FaultInput) -> FaultOutcome`, registered with their stage label
and fork boundary (see `cuer_agent.interventions._fault_types`); the faults that inject a
misleading passage instead are in `cuer_agent.interventions.misleading_faults`.

| name | stage | boundary | what it does to hop h |
|---|---|---|---|
| `empty_retrieval` | retrieval | retrieve | evidence becomes `[]` |
| `irrelevant_evidence` | retrieval | retrieve | evidence → as many unrelated corpus passages |
| `query_drift` | tool | plan | sub-query's entity → an off-topic passage's title |
| `early_termination` | answer | read | answer forced from the hops before h |

**Unrelated** (irrelevant evidence) means: about other entities — no content word
(`cuer_agent.retrieval.tokenize`, i.e. lowercase ``\\w+`` tokens minus `STOPWORDS`) of
the passage is a word of a *name* in the question, hop h's sub-query or a later clean
sub-query, or of a gold answer — yet retrievable for the sub-query: the retriever
(`FaultInput.search`) finds it with the sub-query's other words, so it shares a relation
word ("born", "directed") and scores above zero, as a real bad retrieval would. Drawn
(seeded) from the retriever's top hits; without a retriever, from the corpus.

**Off-topic** (query drift's new topic) is stricter: no content word of the passage is a
content word of the question, of hop h's sub-query, of a later clean sub-query, or of a
gold answer, and the passage is not already in view. Off-topic passages are drawn from
`FaultInput.corpus` by bounded rejection sampling and, only if that finds too few, a
scan from a random offset — so a 1M-passage corpus is not scanned in the common case.

**Skips** (`record.skipped`, nothing returned to apply): ``"empty evidence"``
(irrelevant evidence) when hop h retrieved nothing; ``"no off-topic passage"`` when the
corpus has too few off-topic passages; ``"empty sub-query"`` (query drift) when the
sub-query has no word to work on. The misleading faults share the first and the last.

Irrelevant evidence's passages are real corpus passages under their own ids
(`record.new_ids`, each its own provenance), scored as the retriever scores them for the
sub-query.

All randomness comes from ``seeded_rng(seed, example_id, hop, fault name)``: the same
input gives the same outcome in any process. Inputs (evidence dicts, corpus) are never
mutated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from cuer_agent.interventions._fault_types import (
    CorpusItem,
    Evidence,
    FaultInput,
    FaultOutcome,
    fault,
    fault_record,
)
from cuer_agent.interventions._placement import by_score, scored
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.interventions._text import capitalized_spans, content_words, has_words, topic
from cuer_agent.retrieval import tokenize

__all__ = [
    "SKIP_EMPTY_EVIDENCE",
    "SKIP_EMPTY_SUBQUERY",
    "SKIP_NO_OFF_TOPIC",
    "early_termination",
    "empty_retrieval",
    "evidence_fault",
    "irrelevant_evidence",
    "query_drift",
    "skip",
]

SKIP_EMPTY_EVIDENCE = "empty evidence"
SKIP_NO_OFF_TOPIC = "no off-topic passage"
SKIP_EMPTY_SUBQUERY = "empty sub-query"


def skip(inp: FaultInput, name: str, reason: str, **fields: object) -> FaultOutcome:
    """The outcome of a fault that cannot apply: a record saying why, nothing to apply."""
    return FaultOutcome(record=fault_record(inp, name, skipped=reason, **fields))


def evidence_fault(name: str) -> Callable[[Callable[[FaultInput, np.random.Generator],
                                                    FaultOutcome]],
                                          Callable[[FaultInput], FaultOutcome]]:
    """Register a fault on hop h's evidence (stage retrieval, boundary retrieve) under
    `name`: skipped with ``"empty evidence"`` when hop h retrieved nothing, else applied
    with its ``seeded_rng(seed, example_id, hop, name)``."""
    def deco(func: Callable[[FaultInput, np.random.Generator], FaultOutcome]
             ) -> Callable[[FaultInput], FaultOutcome]:
        @fault(name, stage="retrieval", boundary="retrieve")
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

@fault("empty_retrieval", stage="retrieval", boundary="retrieve")
def empty_retrieval(inp: FaultInput) -> FaultOutcome:
    """Hop h's evidence becomes empty."""
    ids = tuple(ev["id"] for ev in inp.evidence)
    return FaultOutcome(record=fault_record(
        inp, "empty_retrieval", target_ids=ids,
        target_titles=tuple(ev.get("title", "") for ev in inp.evidence),
        params={"removed": len(ids)}), evidence=[])


def _name_words(inp: FaultInput) -> set[str]:
    """Words of the names in the question, the sub-query and the later sub-queries, and
    of the gold answers: what an unrelated passage must not mention."""
    words: set[str] = set()
    for text in (inp.question, inp.subquery, *inp.later_subqueries):
        for span in capitalized_spans(text):
            words |= content_words(span.text)
    for answer in inp.gold_answers:
        words |= content_words(answer)
    return words


def _unrelated(inp: FaultInput, rng: np.random.Generator, n: int,
               in_view: set[str]) -> list[Evidence]:
    """Up to `n` passages about other entities that the retriever finds with the
    sub-query's non-name words, scored for the sub-query (fewer when fewer exist: a
    narrow query returns fewer than k items, as the retriever itself would)."""
    banned = _name_words(inp)
    terms = [w for w in tokenize(inp.subquery) if w not in banned]
    if inp.search is None or not terms:
        return []
    pool = [ev for ev in inp.search(" ".join(terms), 20 * n + 20)
            if str(ev["id"]) not in in_view
            and banned.isdisjoint(content_words(f"{ev.get('title', '')} {ev.get('text', '')}"))]
    if not pool:
        return []
    chosen = sorted(rng.choice(len(pool), size=min(n, len(pool)), replace=False).tolist())
    return [scored(inp.subquery, pool[i], inp.score) for i in chosen]


@evidence_fault("irrelevant_evidence")
def irrelevant_evidence(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """Hop h's evidence is replaced by as many unrelated passages the retriever finds for
    the sub-query's non-name words (without a retriever: off-topic corpus passages)."""
    name = "irrelevant_evidence"
    n = len(inp.evidence)
    in_view = {ev["id"] for ev in inp.evidence}
    picked = _unrelated(inp, rng, n, in_view)
    how: dict[str, object] = {"method": "retriever"}
    if not picked:
        items, how = _off_topic(inp, rng, n, in_view)
        picked = [scored(inp.subquery, {"id": item.id, "title": item.title,
                                        "text": item.text, "rank": 0, "score": 0.0},
                         inp.score) for item in items]
    if not picked or (how["method"] != "retriever" and len(picked) < n):
        return skip(inp, name, SKIP_NO_OFF_TOPIC,
                    params={"needed": n, "found": len(picked), **how})
    evidence = by_score(picked)
    new_ids = tuple(str(ev["id"]) for ev in evidence)
    record = fault_record(
        inp, name, target_ids=tuple(ev["id"] for ev in inp.evidence),
        target_titles=tuple(ev.get("title", "") for ev in inp.evidence),
        new_ids=new_ids, provenance={i: i for i in new_ids}, params={"n": n, **how})
    return FaultOutcome(record=record, evidence=evidence)


@fault("query_drift", stage="tool", boundary="plan")
def query_drift(inp: FaultInput) -> FaultOutcome:
    """Hop h's sub-query drifts off-topic: its entity/topic is replaced by the title of an
    off-topic corpus passage, keeping the question form."""
    name = "query_drift"
    if not has_words(inp.subquery):
        return skip(inp, name, SKIP_EMPTY_SUBQUERY)
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    exclude = {ev["id"] for ev in inp.evidence}
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
    record = fault_record(
        inp, name, target_titles=(replaced,) if replaced else (),
        params={"original_subquery": inp.subquery, "drifted_subquery": drifted,
                "replaced_span": replaced, "drift_title": title,
                "drift_source_id": source.id, "strategy": strategy, **how})
    return FaultOutcome(record=record, subquery=drifted)


@fault("early_termination", stage="answer", boundary="read")
def early_termination(inp: FaultInput) -> FaultOutcome:
    """The agent is forced to answer from the hops before h (fork after read of hop h−1)."""
    return FaultOutcome(record=fault_record(inp, "early_termination",
                                            params={"answer_from_hops": inp.hop - 1}),
                        force_answer=True)

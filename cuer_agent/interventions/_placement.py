"""How an injected or edited evidence item takes its place in a retrieval result, so that
nothing observable tells it apart from the items the retriever returned itself.

* **id** — of the real form `evidence_id(title, paragraph, chunk)`
  (`<sha1(title, paragraph)[:12]>-c<n>`), for a paragraph number drawn (seeded) from the range
  the corpus uses and taken by no indexed chunk and no item in view;
* **score** — what the same retriever gives the item for the same sub-query
  (`BM25Retriever.score_text`);
* **rank** — follows from the score: the list is ordered by (−score, id), as `retrieve`
  orders it, and ranked 1..n;
* **length** — an injected item makes room by pushing out the lowest-scored original
  item, so the hop still shows as many items as the retriever returns.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Sequence

import numpy as np

from cuer_agent.trace import Evidence, evidence_id

Scorer = Callable[[str, str, str], float]
"""(query, title, text) -> the retriever's score for that passage."""


class Taken:
    """Ids already in use — in view, or anywhere in the index — as one membership test,
    without copying the index's set."""

    def __init__(self, *collections: Collection[str]) -> None:
        self.collections = collections

    def __contains__(self, item: object) -> bool:
        return any(item in c for c in self.collections)


def mint_id(title: str, taken: Container[str], max_paragraph: int,
            rng: np.random.Generator) -> str:
    """A real-form id for a new passage titled `title`: a paragraph number in
    0..max(max_paragraph, 9) that no id in `taken` uses for this title (chunk 0)."""
    top = max(max_paragraph, 9) + 1
    for _ in range(64):
        candidate = evidence_id(title, int(rng.integers(top)), 0)
        if candidate not in taken:
            return candidate
    paragraph = top
    while evidence_id(title, paragraph, 0) in taken:
        paragraph += 1
    return evidence_id(title, paragraph, 0)


def scored(query: str, item: Evidence, score: Scorer | None) -> Evidence:
    """The item with the retriever's score for `query` (unchanged without a scorer)."""
    if score is None:
        return item
    return item.model_copy(update={"score": float(score(query, item.title, item.text))})


def by_score(items: Sequence[Evidence]) -> list[Evidence]:
    """Ordered as the retriever orders its results, (−score, id), and ranked 1..n."""
    ordered = sorted(items, key=lambda ev: (-ev.score, ev.id))
    return [ev.model_copy(update={"rank": rank}) for rank, ev in enumerate(ordered, start=1)]


def place(evidence: Sequence[Evidence], injected: Evidence, query: str,
          score: Scorer | None, k: int | None = None) -> list[Evidence]:
    """`evidence` with `injected` among it, scored for `query` and ordered by score. When
    the list is full (`k` items, or as many as `evidence` held when `k` is unknown), the
    lowest-scored original item makes room."""
    new = scored(query, injected, score)
    items = by_score([*evidence, new])
    limit = len(evidence) if k is None else k
    if len(items) > max(limit, 1):
        drop = max(i for i, ev in enumerate(items) if ev.id != new.id)
        del items[drop]
    return by_score(items)

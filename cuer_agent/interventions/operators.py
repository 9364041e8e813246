"""CUE-R evidence operators: pure functions on an evidence list (`Evidence`, in view order).

* REMOVE drops the target.
* REPLACE puts a related non-supporting item in the target's place: hardness `easy`
  (random), `medium` (most similar to the question), `hard` (most similar to the
  target). Never an item already in view, never one with a gold supporting title.
* DUPLICATE adds a copy of the target at the `end`, the `front`, or right `after` the
  original. The copy has an id of the real form (`<sha1(title, paragraph)[:12]>-c0`, a
  paragraph number nothing else uses: `_placement.mint_id`), so no id tells it apart.

After every edit the items are re-ranked 1..n in their new order, so the edited list
looks like an ordinary retrieval result (a gap in the ranks would tell a diagnoser that
something was removed). Inputs are never mutated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from cuer_agent.interventions._placement import mint_id
from cuer_agent.interventions.targets import Target
from cuer_agent.trace import Evidence

if TYPE_CHECKING:  # typing only: interventions do not depend on retrieval at run time
    from cuer_agent.retrieval import BM25Retriever, Chunk

Hardness = Literal["easy", "medium", "hard"]
Position = Literal["end", "front", "after"]
HARDNESS: tuple[Hardness, ...] = ("easy", "medium", "hard")
POSITIONS: tuple[Position, ...] = ("end", "front", "after")


def rerank(evidence: Sequence[Evidence]) -> list[Evidence]:
    return [ev.model_copy(update={"rank": rank}) for rank, ev in enumerate(evidence, start=1)]


def remove(evidence: Sequence[Evidence], targets: Sequence[Target]) -> list[Evidence]:
    drop = {t.id for t in targets}
    return rerank([ev for ev in evidence if ev.id not in drop])


def replace(evidence: Sequence[Evidence], target: Target,
            replacement: Evidence) -> list[Evidence]:
    edited = list(evidence)
    edited[target.index] = replacement.model_copy(update={"score": evidence[target.index].score})
    return rerank(edited)


def duplicate(evidence: Sequence[Evidence], target: Target, position: Position = "end",
              new_id: str | None = None) -> tuple[list[Evidence], Evidence]:
    """A copy of the target under `new_id` (default: a real-form id of the target's title
    that no item in view uses)."""
    original = evidence[target.index]
    if new_id is None:
        rng = np.random.default_rng(int(hashlib.sha256(original.id.encode()).hexdigest()[:16],
                                        16))
        new_id = mint_id(original.title, {ev.id for ev in evidence}, 0, rng)
    copy = original.model_copy(update={"id": new_id})
    items = list(evidence)
    if position == "end":
        items.append(copy)
    elif position == "front":
        items.insert(0, copy)
    else:
        items.insert(target.index + 1, copy)
    return rerank(items), copy


class ReplacementPool:
    """Non-supporting items an example's REPLACE may draw from.

    Backed by the retriever the system itself uses (the example's own pool, or the
    shared corpus), so "most similar" means BM25-most-similar over the same chunks.
    """

    def __init__(self, retriever: BM25Retriever, gold_titles: Collection[str]) -> None:
        self.retriever = retriever
        self.gold = set(gold_titles)

    def _eligible(self, chunk_id: str, title: str, in_view: set[str]) -> bool:
        return chunk_id not in in_view and title not in self.gold

    def pick(self, hardness: Hardness, evidence: Sequence[Evidence], target: Target,
             question: str, rng: np.random.Generator) -> Evidence | None:
        in_view = {ev.id for ev in evidence}
        if hardness == "easy":
            return self._random(in_view, rng)
        query = question if hardness == "medium" else evidence[target.index].text
        return self._most_similar(query, in_view)

    def _random(self, in_view: set[str], rng: np.random.Generator) -> Evidence | None:
        chunks = self.retriever.chunks
        # Rejection sampling stays O(1) per draw on a large corpus; fall back to a scan
        # when the eligible share is small.
        for _ in range(64):
            chunk = chunks[int(rng.integers(len(chunks)))]
            if self._eligible(chunk.id, chunk.title, in_view):
                return _as_evidence(chunk)
        eligible = [c for c in chunks if self._eligible(c.id, c.title, in_view)]
        return _as_evidence(eligible[int(rng.integers(len(eligible)))]) if eligible else None

    def _most_similar(self, query: str, in_view: set[str]) -> Evidence | None:
        k = len(in_view) + 32
        while True:
            hits = self.retriever.retrieve(query, k)
            for ev in hits:
                if self._eligible(ev.id, ev.title, in_view):
                    return ev
            if len(hits) < k:  # every item with a positive score was seen
                break
            k *= 4
        return None


def _as_evidence(chunk: Chunk) -> Evidence:
    return chunk.to_evidence(0, 0.0)

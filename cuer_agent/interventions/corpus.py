"""A fault as a state of the corpus the agent searches (persistence `corpus`).

A retrieval fault at hop h changes the world, not one reply: from hop h on, every search
the run makes — the hop's first attempt, its retries, later hops, a probe's regenerated
suffix — is answered by the same retriever over the changed corpus. What recovery then
measures is a property of the world and the agent: whether the fact can be found
elsewhere, and whether the agent finds it.

`CorpusEdit` is the change:

* `withheld` — chunk ids taken out of the index (empty and irrelevant evidence withhold
  the passages hop h read its fact from; the fact's other statements stay);
* `added` — passages indexed beside the real ones (stale and conflicting evidence: a
  passage the world's own generator writes with another value of the fact), ranked by
  the retriever's own score for each query;
* `edited` — chunk id → its new text (content tampering edits the passage in the index,
  so every query that retrieves it gets the tampered text);
* `blank` — query keys (`query_key`) the tool answers with nothing (empty retrieval: the
  faulted sub-query returns no result; asking anything else meets the withheld index).

Scores of added and edited passages are the retriever's BM25 with the index's own
statistics (`BM25Retriever.score_text`): an added passage does not move idf, which is
the one way this differs from re-indexing the corpus — a difference of one document
in thousands.

`CorpusCondition` holds an edit from hop h on; `repaired(j)` gives a probe a clean tool
at hop j while the world stays changed everywhere else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cuer_agent.interventions._placement import by_score
from cuer_agent.retrieval import Retriever, tokenize
from cuer_agent.trace import Evidence

Search = Callable[[str, int], list[Evidence]]
Scorer = Callable[[str, str, str], float]


def query_key(query: str) -> tuple[str, ...]:
    """What makes two queries the same question to the retriever: its tokens, sorted."""
    return tuple(sorted(tokenize(query)))


@dataclass(frozen=True)
class CorpusEdit:
    """A change of the corpus (see the module docstring)."""

    withheld: frozenset[str] = frozenset()
    added: tuple[Evidence, ...] = ()
    edited: Mapping[str, Evidence] = field(default_factory=dict)
    blank: frozenset[tuple[str, ...]] = frozenset()

    @property
    def touched(self) -> frozenset[str]:
        """Ids whose presence or text the edit changes."""
        return self.withheld | {ev.id for ev in self.added} | set(self.edited)

    @property
    def shown(self) -> frozenset[str]:
        """Ids of the passages the edit puts in view (added or edited): the injected items."""
        return frozenset({ev.id for ev in self.added} | set(self.edited))

    def view(self, search: Search, score: Scorer | None, query: str, k: int) -> list[Evidence]:
        """What the retriever returns for `query` from the edited corpus: the top `k` by
        (−score, id), ranked 1..n."""
        if query_key(query) in self.blank or k <= 0:
            return []
        extra = len(self.withheld) + len(self.edited)
        skip = self.withheld | set(self.edited)
        items = [ev for ev in search(query, k + extra) if ev.id not in skip]
        if score is not None:
            for ev in (*self.edited.values(), *self.added):
                value = float(score(query, ev.title, ev.text))
                if value > 0:
                    items.append(ev.model_copy(update={"score": value}))
        return by_score(items)[:k] if len(items) > k else by_score(items)

    def digest(self) -> str:
        """A short fingerprint of the edit (it names the edit in execution keys)."""
        body = json.dumps([sorted(self.withheld), [ev.model_dump(mode="json") for ev in self.added],
                           sorted((i, ev.model_dump(mode="json")) for i, ev in self.edited.items()),
                           sorted(self.blank)],
                          sort_keys=True, default=list)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]

    def missed(self, clean: Sequence[Evidence], shown: Sequence[Evidence]) -> bool:
        """Did the edit change what a search showed: a withheld item the clean search
        had, or an added or edited item now in view?"""
        clean_ids = {ev.id for ev in clean}
        return bool(clean_ids & self.withheld) or any(ev.id in self.shown for ev in shown)


def _clean(retriever: Retriever, query: str, k: int) -> list[Evidence]:
    return list(retriever.retrieve(query, k))


@dataclass(frozen=True, repr=False)
class CorpusCondition:
    """`edit` in force from hop `hop` on (not at repaired hops)."""

    hop: int
    edit: CorpusEdit
    repaired_hops: frozenset[int] = frozenset()

    def __repr__(self) -> str:
        return (f"CorpusCondition(hop={self.hop}, edit={self.edit.digest()}, "
                f"repaired={sorted(self.repaired_hops)})")

    def issue(self, hop: int, attempt: int, planned: str) -> str:
        return planned

    def retrieve(self, retriever: Retriever, hop: int, query: str, k: int) -> list[Evidence]:
        if hop < self.hop or hop in self.repaired_hops:
            return _clean(retriever, query, k)

        def search(q: str, n: int) -> list[Evidence]:
            return _clean(retriever, q, n)

        return self.edit.view(search, getattr(retriever, "score_text", None), query, k)

    def reading(self, hop: int) -> int:
        return 0  # a fault changes what the tools return, never how the reader reads

    def hop_budget(self, budget: int) -> int:
        return budget

    def repaired(self, hop: int) -> CorpusCondition:
        return dataclasses.replace(self, repaired_hops=self.repaired_hops | {hop})

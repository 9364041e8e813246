"""The retriever protocol the agent depends on (`Retriever`), its BM25 implementation
(`BM25Retriever`, with the process's shared indexes and kept answers), and
`support_recall_at_k`. Engines: `_engines`; tokens and chunks: `_text`."""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np

from cuer_agent._lru import LRU
from cuer_agent.data._example import Dataset, Passage
from cuer_agent.errors import ConfigError
from cuer_agent.retrieval._engines import ENGINES, IDFS, lucene_idf
from cuer_agent.retrieval._text import DEFAULT_MAX_WORDS, Chunk, chunk_passages, tokenize
from cuer_agent.trace import Evidence

RETRIEVALS_KEPT = 4096
"""Answers a retriever keeps, per (query, k): a study's forks and probes repeat the
sub-queries of a few hundred hops."""
INDEXES_KEPT = 16
"""Indexes `BM25Retriever.from_passages` keeps per process, by content (`_INDEXES`)."""


@runtime_checkable
class Retriever(Protocol):
    """What the agent depends on: ranked evidence for a query."""

    def retrieve(self, query: str, k: int) -> list[Evidence]: ...


class BM25Retriever:
    """BM25 over chunks; ``retrieve`` orders by ``(-score, chunk id)`` and drops score 0."""

    def __init__(self, chunks: Iterable[Chunk], *, engine: str = "bm25s", k1: float = 1.5,
                 b: float = 0.75, idf: str = "lucene") -> None:
        if engine not in ENGINES:
            raise ConfigError(f"unknown retrieval engine {engine!r}; known: {sorted(ENGINES)}")
        if idf not in IDFS:
            raise ConfigError(f"unknown idf {idf!r}; known: {', '.join(IDFS)}")
        self.chunks: list[Chunk] = list(chunks)
        self.engine = engine
        self.idf = idf
        self.k1, self.b = k1, b
        self._engine = ENGINES[engine]((tokenize(f"{c.title}\n{c.text}") for c in self.chunks),
                                       k1, b, idf)
        self._answers: LRU[tuple[str, int], tuple[Evidence, ...]] = LRU(RETRIEVALS_KEPT)
        self._answers_lock = threading.Lock()

    @classmethod
    def from_passages(cls, passages: Iterable[Passage], *, max_words: int = DEFAULT_MAX_WORDS,
                      engine: str = "bm25s", k1: float = 1.5, b: float = 0.75,
                      idf: str = "lucene") -> BM25Retriever:
        """The index of `passages`, built once per process for the same passages and
        settings: a study indexes one corpus for its pools, its runs and its probes, and
        a propagation study each example's pool once per fault. Sharing is safe because
        a retriever never changes after it is built (its kept answers are what `retrieve`
        would compute again). Kept: the last `INDEXES_KEPT` built."""
        passages = list(passages)
        key = _index_key(passages, max_words, engine, k1, b, idf)
        with _INDEXES_LOCK:  # one build, however many threads ask at once
            index = _INDEXES.get(key)
            if index is None:
                index = cls(chunk_passages(passages, max_words), engine=engine, k1=k1, b=b,
                            idf=idf)
                _INDEXES.put(key, index)
        return index

    def __len__(self) -> int:
        return len(self.chunks)

    @functools.cached_property
    def ids(self) -> frozenset[str]:
        """Every chunk id in the index."""
        return frozenset(c.id for c in self.chunks)

    @functools.cached_property
    def max_paragraph(self) -> int:
        """The largest paragraph index of the indexed chunks (0 for an empty index)."""
        return max((c.paragraph for c in self.chunks), default=0)

    def score_text(self, query: str, title: str, text: str) -> float:
        """Okapi BM25 of a passage for `query` with this index's statistics: what
        `retrieve` would report for it had it been indexed (query words the index has
        never seen add 0, as they do for indexed chunks)."""
        idf, avgdl = self._statistics
        doc = tokenize(f"{title}\n{text}")
        if not doc or avgdl <= 0:
            return 0.0
        tf: dict[str, int] = {}
        for token in doc:
            tf[token] = tf.get(token, 0) + 1
        norm = self.k1 * (1.0 - self.b + self.b * len(doc) / avgdl)
        total = math.fsum(idf.get(t, 0.0) * tf[t] * (self.k1 + 1.0) / (tf[t] + norm)
                          for t in tokenize(query) if t in tf)
        return float(np.float32(total))

    @functools.cached_property
    def _statistics(self) -> tuple[dict[str, float], float]:
        """(idf per indexed term, mean document length), computed once on first use."""
        df: dict[str, int] = {}
        total = 0
        for c in self.chunks:
            tokens = tokenize(f"{c.title}\n{c.text}")
            total += len(tokens)
            for t in set(tokens):
                df[t] = df.get(t, 0) + 1
        n = len(self.chunks)
        if self.idf == "lucene":
            idf = {t: lucene_idf(n, d) for t, d in df.items()}
        else:
            idf = {t: max(0.0, math.log((n - d + 0.5) / (d + 0.5))) for t, d in df.items()}
        return idf, total / n if n else 0.0

    def retrieve(self, query: str, k: int) -> list[Evidence]:
        """The top `k` chunks for `query`. A deterministic tool: forks and probes ask
        the same sub-queries again and again, so answers are kept (`RETRIEVALS_KEPT`;
        `Evidence` is frozen, so callers may share the items)."""
        with self._answers_lock:
            kept = self._answers.get((query, k))
        if kept is None:
            kept = tuple(self._search(query, k))
            with self._answers_lock:
                self._answers.put((query, k), kept)
        return list(kept)

    def _search(self, query: str, k: int) -> list[Evidence]:
        if k <= 0 or not self.chunks:
            return []
        scores = self._engine.scores(tokenize(query))
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            # Keep everything tied with the k-th best score, so the cut below is decided
            # by chunk id and not by the engine's partition order.
            kth = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth]
        order = sorted(hits.tolist(), key=lambda i: (-scores[i], self.chunks[i].id))[:k]
        return [self.chunks[i].to_evidence(rank, float(scores[i]))
                for rank, i in enumerate(order, start=1)]


_INDEXES: LRU[str, BM25Retriever] = LRU(INDEXES_KEPT)
_INDEXES_LOCK = threading.Lock()


def _index_key(passages: list[Passage], max_words: int, engine: str, k1: float, b: float,
               idf: str) -> str:
    """A digest of everything an index is built from: each passage's title, index and
    text (length-prefixed, so no two lists share a digest by concatenation) and the
    settings."""
    digest = hashlib.sha256(repr((max_words, engine, k1, b, idf)).encode())
    for p in passages:
        for part in (p.title.encode(), str(p.index).encode(), p.text.encode()):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return digest.hexdigest()


def support_recall_at_k(dataset: Dataset, k: int = 5, *, engine: str = "bm25s",
                        idf: str = "lucene", max_words: int = DEFAULT_MAX_WORDS
                        ) -> dict[int, float]:
    """Hop position (1-based) → share of questions whose support passage for that hop is
    in the BM25 top ``k`` when the whole question is the query.

    Retrieval is over the shared ``dataset.corpus`` (one index) when there is one, else
    over each example's own passages. A hop is found when a retrieved chunk's title equals
    its support title; the denominator of a hop position counts the questions whose hop at
    that position has a support title (hops without one are left out).
    """
    index = functools.partial(BM25Retriever.from_passages, max_words=max_words,
                              engine=engine, idf=idf)
    shared = index(dataset.corpus) if dataset.corpus is not None else None
    found: dict[int, int] = {}
    total: dict[int, int] = {}
    for ex in dataset.examples:
        titled = [(pos, h.support_title) for pos, h in enumerate(ex.hops, start=1)
                  if h.support_title is not None]
        if not titled:
            continue
        retriever = (shared if shared is not None
                     else index(ex.passages))
        titles = {e.title for e in retriever.retrieve(ex.question, k)}
        for pos, title in titled:
            total[pos] = total.get(pos, 0) + 1
            found[pos] = found.get(pos, 0) + (title in titles)
    return {pos: found[pos] / total[pos] for pos in sorted(total)}


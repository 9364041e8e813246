"""The BM25 scoring engines (`ENGINES`: bm25s and the rank_bm25 reference) behind
`BM25Retriever`, both on the textbook Okapi scale with either idf of `IDFS`. bm25s and
rank_bm25 are imported when an engine is built, not with this module."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np


class ScoringEngine(Protocol):
    """A BM25 engine: one score per indexed document, textbook Okapi scale."""

    def scores(self, query: list[str]) -> np.ndarray: ...


EngineFactory = Callable[[Iterable[list[str]], float, float, str], ScoringEngine]
"""``(token lists of the documents, k1, b, idf) -> engine``; idf is one of `IDFS`."""

IDFS: tuple[str, ...] = ("robertson", "lucene")


class _Bm25sEngine:
    """bm25s with ``method="robertson"`` (Okapi tf part) and the chosen idf."""

    def __init__(self, docs: Iterable[list[str]], k1: float, b: float, idf: str) -> None:
        import bm25s

        # Mapping to ids while tokenizing keeps one int pointer per token instead of one str
        # object, and `Tokenized` lets bm25s skip its own vocabulary pass (faster at 1M).
        vocab: dict[str, int] = {}
        add = vocab.setdefault
        ids = [[add(t, len(vocab)) for t in doc] for doc in docs]
        self._n = len(ids)
        self._vocab = vocab
        self._scale = k1 + 1.0  # bm25s's tf part is tf/(tf + k1·norm): no (k1 + 1) factor
        self._model: Any = None
        if vocab:
            self._model = bm25s.BM25(k1=k1, b=b, method="robertson", idf_method=idf)
            self._model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab),
                              create_empty_token=False, show_progress=False)
            # Robertson: terms in at least half the documents have idf exactly 0; skipping
            # them saves scanning the longest posting lists and changes no score.
            df = np.diff(self._model.scores["indptr"])
            self._useful = 2 * df < self._n if idf == "robertson" else df >= 0

    def scores(self, query: list[str]) -> np.ndarray:
        ids = [i for t in query if (i := self._vocab.get(t)) is not None and self._useful[i]]
        if not ids:
            return np.zeros(self._n, dtype=np.float32)
        scores: np.ndarray = self._model.get_scores_from_ids(ids) * np.float32(self._scale)
        return scores


class _RankBm25Engine:
    """rank_bm25 ``BM25Okapi(epsilon=0)``: the plain-Python reference implementation."""

    def __init__(self, docs: Iterable[list[str]], k1: float, b: float, idf: str) -> None:
        from rank_bm25 import BM25Okapi

        corpus = list(docs)
        self._n = len(corpus)
        model_class = _lucene_okapi() if idf == "lucene" else BM25Okapi
        # BM25Okapi divides by the vocabulary size and the mean length: guard the empty case.
        self._model = (model_class(corpus, k1=k1, b=b, epsilon=0.0)
                       if any(corpus) else None)

    def scores(self, query: list[str]) -> np.ndarray:
        # Unknown and zero-idf terms add exactly 0; skipping them avoids a pass over all docs.
        model = self._model
        terms = [t for t in query if model is not None and model.idf.get(t, 0) > 0]
        if model is None or not terms:
            return np.zeros(self._n)
        scores: np.ndarray = model.get_scores(terms)
        return scores


def lucene_idf(n: int, df: int) -> float:
    """bm25s's "lucene" idf of a term in `df` of `n` documents."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


@functools.cache
def _lucene_okapi() -> type:
    from rank_bm25 import BM25Okapi

    class LuceneIdfOkapi(BM25Okapi):
        """BM25Okapi with bm25s's "lucene" idf, log(1 + (N - df + 0.5) / (df + 0.5))."""

        def _calc_idf(self, nd: dict[str, int]) -> None:
            n = self.corpus_size
            self.idf = {w: lucene_idf(n, df) for w, df in nd.items()}

    return LuceneIdfOkapi


ENGINES: dict[str, EngineFactory] = {
    "bm25s": _Bm25sEngine,
    "rank_bm25": _RankBm25Engine,
}
"""Engine registry: a new engine is one entry."""

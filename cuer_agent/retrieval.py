"""BM25 retrieval over passage chunks with stable chunk ids.

* `tokenize` — the one tokenizer every engine uses: lowercase, unicode ``\\w+`` tokens,
  a fixed English stopword list, no stemming.
* `chunk_passages` — greedy sentence packing of each `Passage` into `Chunk`s of at most
  ``max_words`` words. A chunk's id is ``evidence_id(title, paragraph, chunk)``, so the
  same passage yields the same ids in every run and every intervention.
* `BM25Retriever` — Okapi BM25 over the chunks, with two engines in `ENGINES`: ``bm25s``
  (sparse precomputed index, fast, default) and ``rank_bm25`` (``BM25Okapi(epsilon=0)``,
  the reference). Both are configured to compute the same function, and scores are
  reported on the textbook scale (with the ``k1 + 1`` numerator that bm25s leaves out), so
  they agree up to float rounding and exact ties. Results are ordered by
  ``(-score, chunk id)``; only items with a score > 0 are returned.
* idf: ``"lucene"`` (default) is ``log(1 + (N - df + 0.5) / (df + 0.5))``, always
  positive. ``"robertson"`` is ``log((N - df + 0.5) / (df + 0.5))`` floored at 0, so a
  term in half the documents or more scores nothing — in a 10-passage distractor pool
  that silences any word in 5 passages (HotpotQA support recall@5 0.756 vs 0.831 with
  lucene), and a 2-passage pool retrieves nothing at all. Both engines implement both,
  so parity holds either way.
* `Retriever` — the protocol the agent depends on: ``retrieve(query, k) -> list[Evidence]``.
* `BM25Retriever.score_text(query, title, text)` — the score this retriever would give a
  passage that is not in its index (an injected one), from the index's own statistics
  (idf, average length); for an indexed chunk it equals the score `retrieve` reports.
* LangChain interop: `as_langchain_retriever` exposes any `Retriever` as a langchain-core
  ``BaseRetriever``; `LangChainRetrieverAdapter` turns any ``BaseRetriever`` into a
  `Retriever`.
* `support_recall_at_k` — per-hop share of questions whose support passage is in the top k.

The index text of a chunk is its title followed by its text: later chunks of a long
passage do not repeat the entity name, and open-corpus BM25 baselines index titles too.
bm25s, rank_bm25 and langchain-core are imported lazily so importing this module is cheap.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from cuer_agent._lru import LRU
from cuer_agent.data._example import Dataset, Passage
from cuer_agent.errors import ConfigError
from cuer_agent.trace import Evidence, evidence_id

if TYPE_CHECKING:
    from langchain_core.retrievers import BaseRetriever

__all__ = [
    "DEFAULT_MAX_WORDS",
    "ENGINES",
    "IDFS",
    "STOPWORDS",
    "BM25Retriever",
    "Chunk",
    "LangChainRetrieverAdapter",
    "Retriever",
    "ScoringEngine",
    "as_langchain_retriever",
    "chunk_passages",
    "support_recall_at_k",
    "tokenize",
]

# A fixed list (not NLTK's or sklearn's at runtime) so tokenization never changes under us.
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for
from further had has have having he her here hers herself him himself his how i if in
into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up
very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t d ll m re ve
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"\w+")
# A sentence ends at . ! or ? (optionally closed by quotes/brackets) followed by whitespace,
# so "3.5" and "U.S.A" stay inside one sentence; the last sentence runs to the end.
_SENTENCE = re.compile(r"\S.*?(?:[.!?][\"'”’)\]]*(?=\s)|$)", re.S)

DEFAULT_MAX_WORDS = 2000
"""Large enough that every paragraph of the shipped datasets stays one chunk ``c0``
(the longest HotpotQA dev paragraph has 1,309 words); chunking is for user corpora."""
RETRIEVALS_KEPT = 4096
"""Answers a retriever keeps, per (query, k): a study's forks and probes repeat the
sub-queries of a few hundred hops."""
INDEXES_KEPT = 16
"""Indexes `BM25Retriever.from_passages` keeps per process, by content (`_INDEXES`)."""


def tokenize(text: str) -> list[str]:
    """Lowercase unicode ``\\w+`` tokens without stopwords. Deterministic, no stemming."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: part of one passage, with a stable id."""

    id: str
    title: str
    text: str
    paragraph: int
    """`Passage.index` of the source passage."""
    chunk: int
    """0-based chunk number inside the passage."""

    def to_evidence(self, rank: int = 0, score: float = 0.0) -> Evidence:
        return Evidence(id=self.id, title=self.title, text=self.text, rank=rank, score=score)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (see `_SENTENCE`); the interventions split text with it too."""
    return [s for m in _SENTENCE.finditer(text) if (s := m.group().strip())]


def chunk_passages(passages: Iterable[Passage], max_words: int = DEFAULT_MAX_WORDS) -> list[Chunk]:
    """Greedy sentence packing: chunks of at most ``max_words`` words, in passage order.

    A passage that fits is one chunk ``c0`` with its text verbatim. Otherwise sentences are
    packed in order; a sentence longer than ``max_words`` becomes a chunk of its own.
    """
    if max_words < 1:
        raise ConfigError(f"max_words must be >= 1, got {max_words}")
    chunks: list[Chunk] = []
    for p in passages:
        if len(p.text.split()) <= max_words:  # fast path: all of HotpotQA, the 1M corpus
            chunks.append(Chunk(evidence_id(p.title, p.index, 0), p.title, p.text, p.index, 0))
            continue
        packs: list[list[str]] = []
        size = 0
        for sentence in sentences(p.text):
            n = len(sentence.split())
            if not packs or size + n > max_words:
                packs.append([sentence])
                size = n
            else:
                packs[-1].append(sentence)
                size += n
        for no, pack in enumerate(packs):
            chunks.append(Chunk(evidence_id(p.title, p.index, no), p.title, " ".join(pack),
                                p.index, no))
    return chunks


@runtime_checkable
class Retriever(Protocol):
    """What the agent depends on: ranked evidence for a query."""

    def retrieve(self, query: str, k: int) -> list[Evidence]: ...


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


# --- LangChain interop -------------------------------------------------------------------


@functools.cache
def _langchain_class() -> type[BaseRetriever]:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class CuerLangChainRetriever(BaseRetriever):
        """A cuer-agent `Retriever` behind the langchain-core retriever interface."""

        retriever: Any
        k: int = 5

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [Document(page_content=e.text, id=e.id,
                             metadata={"id": e.id, "title": e.title, "rank": e.rank,
                                       "score": e.score})
                    for e in self.retriever.retrieve(query, self.k)]

    return CuerLangChainRetriever


def as_langchain_retriever(retriever: Retriever, k: int = 5) -> BaseRetriever:
    """Wrap a `Retriever` as a langchain-core ``BaseRetriever`` returning ``k`` Documents
    with ``metadata = {"id", "title", "rank", "score"}``."""
    return _langchain_class()(retriever=retriever, k=k)


class LangChainRetrieverAdapter:
    """Any langchain-core ``BaseRetriever`` as a `Retriever`.

    ``retrieve(query, k)`` calls ``invoke(query)`` and keeps the first ``k`` Documents (the
    wrapped retriever's own ``k`` must be at least as large). Per Document, in order:

    * id — ``metadata["id"]``; else ``Document.id``; else, when ``metadata["title"]`` is
      set, ``evidence_id(title, metadata.get("paragraph", 0), metadata.get("chunk", 0))``
      (the id our own chunks get, so such corpora keep their ids); else
      ``evidence_id("sha1:" + sha1(page_content), 0, 0)`` — stable for the same text.
    * title — ``metadata["title"]``, else the first non-empty line of the content.
    * rank — 1-based position; score — ``float(metadata["score"])`` if present, else 0.0.
    """

    def __init__(self, lc_retriever: BaseRetriever) -> None:
        self.lc_retriever = lc_retriever

    def retrieve(self, query: str, k: int) -> list[Evidence]:
        docs = self.lc_retriever.invoke(query)[: max(k, 0)]
        return [self._evidence(doc, rank) for rank, doc in enumerate(docs, start=1)]

    @staticmethod
    def _evidence(doc: Any, rank: int) -> Evidence:
        meta = doc.metadata or {}
        text: str = doc.page_content
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        title = str(meta.get("title") or (lines[0] if lines else ""))
        if meta.get("id") is not None:
            eid = str(meta["id"])
        elif getattr(doc, "id", None):
            eid = str(doc.id)
        elif meta.get("title"):
            eid = evidence_id(str(meta["title"]), int(meta.get("paragraph", 0)),
                              int(meta.get("chunk", 0)))
        else:
            eid = evidence_id("sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest(), 0, 0)
        score = float(meta["score"]) if meta.get("score") is not None else 0.0
        return Evidence(id=eid, title=title, text=text, rank=rank, score=score)


# --- diagnostics ------------------------------------------------------------------------


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

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

Where it lives: tokens, sentences and chunks in `_text`, the engines in `_engines`, the
protocol, `BM25Retriever` and `support_recall_at_k` in `_bm25`, the LangChain interop in
`_langchain`; every name is imported from here.
"""

from __future__ import annotations

from cuer_agent.retrieval._bm25 import (
    INDEXES_KEPT,
    RETRIEVALS_KEPT,
    BM25Retriever,
    Retriever,
    support_recall_at_k,
)
from cuer_agent.retrieval._engines import ENGINES, IDFS, EngineFactory, ScoringEngine, lucene_idf
from cuer_agent.retrieval._langchain import LangChainRetrieverAdapter, as_langchain_retriever
from cuer_agent.retrieval._text import (
    DEFAULT_MAX_WORDS,
    STOPWORDS,
    Chunk,
    chunk_passages,
    sentences,
    tokenize,
)

__all__ = [
    "DEFAULT_MAX_WORDS",
    "ENGINES",
    "IDFS",
    "INDEXES_KEPT",
    "RETRIEVALS_KEPT",
    "STOPWORDS",
    "BM25Retriever",
    "Chunk",
    "EngineFactory",
    "LangChainRetrieverAdapter",
    "Retriever",
    "ScoringEngine",
    "as_langchain_retriever",
    "chunk_passages",
    "lucene_idf",
    "sentences",
    "support_recall_at_k",
    "tokenize",
]

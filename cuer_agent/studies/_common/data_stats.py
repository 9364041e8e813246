"""`cuer-agent data stats`: how big a data set is and how much it needs iterative retrieval."""

from __future__ import annotations

from collections import Counter
from typing import NotRequired, TypedDict

from cuer_agent.data import Dataset
from cuer_agent.retrieval import support_recall_at_k

RECALL_K = 5
"""The retrieval depth of `support_recall_at_5`."""


class DatasetStats(TypedDict):
    """`cuer-agent data stats` (printed as one JSON object with --json)."""

    dataset: str
    source: str
    examples: int
    passages: int
    """Passages in the shared corpus, else in the examples' own pools."""
    hops: dict[str, int]
    """Hop count → examples."""
    question_types: dict[str, int]
    support_recall_at_5: NotRequired[dict[str, float]]
    """With per-hop gold only (see `dataset_stats`)."""


def dataset_stats(dataset: Dataset) -> DatasetStats:
    """Counts, hop histogram, question types and (with per-hop gold) support recall@5.

    `support_recall_at_5` maps hop position → share of questions whose support passage
    for that hop is in the BM25 top `RECALL_K` when the whole question is the query: high
    for hop 1 and low for the last hop means the data needs more than one retrieval.
    """
    examples = dataset.examples
    if dataset.corpus is not None:
        passages = len(dataset.corpus)
    else:
        passages = sum(len(ex.passages) for ex in examples)
    stats: DatasetStats = {
        "dataset": dataset.name,
        "source": dataset.source,
        "examples": len(examples),
        "passages": passages,
        "hops": {str(h): c for h, c in dataset.hop_histogram().items()},
        "question_types": dict(sorted(Counter(ex.qtype for ex in examples).items())),
    }
    if any(hop.support_title for ex in examples for hop in ex.hops):
        recall = support_recall_at_k(dataset, RECALL_K)
        stats["support_recall_at_5"] = {str(h): round(r, 4) for h, r in recall.items()}
    return stats

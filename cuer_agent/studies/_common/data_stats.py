"""`cuer-agent data stats`: how big a data set is and how much it needs iterative retrieval."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cuer_agent.data import Dataset
from cuer_agent.retrieval import support_recall_at_k


def dataset_stats(dataset: Dataset, *, k: int = 5) -> dict[str, Any]:
    """Counts, hop histogram, question types and (with per-hop gold) support recall@k.

    `support_recall_at_<k>` maps hop position → share of questions whose support passage
    for that hop is in the BM25 top k when the whole question is the query: high for hop 1
    and low for the last hop means the data needs more than one retrieval.
    """
    examples = dataset.examples
    if dataset.corpus is not None:
        passages = len(dataset.corpus)
    else:
        passages = sum(len(ex.passages) for ex in examples)
    stats: dict[str, Any] = {
        "dataset": dataset.name,
        "source": dataset.source,
        "examples": len(examples),
        "passages": passages,
        "hops": {str(h): c for h, c in dataset.hop_histogram().items()},
        "question_types": dict(sorted(Counter(ex.qtype for ex in examples).items())),
    }
    if any(hop.support_title for ex in examples for hop in ex.hops):
        recall = support_recall_at_k(dataset, k)
        stats[f"support_recall_at_{k}"] = {str(h): round(r, 4) for h, r in recall.items()}
    return stats

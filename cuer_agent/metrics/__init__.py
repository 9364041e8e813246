"""Metrics: answer scores (official HotpotQA normalisation), utility axes, statistics."""

from cuer_agent.metrics.answer import (
    answer_scores,
    exact_match,
    f1_score,
    normalize_answer,
    recall_correct,
    soft_correct,
    token_recall,
)

__all__ = ["answer_scores", "exact_match", "f1_score", "normalize_answer", "recall_correct",
           "soft_correct", "token_recall"]

"""The CUE-R axes (paper-notes §A): correctness, grounding, confidence error, divergence.

Utilities are "higher is better"; a delta is U(original) − U(counterfactual), so a
positive delta means the intervention hurt. Confidence error enters as utility −CE.
Trace divergence D is a separate behavioural signal (not a utility):

    D(τ, τ') = w_used · d_J(U, U') + w_answer · 1[y ≠ y'] + w_conf · |c − c'|

with Jaccard distance d_J (0 when both sets are empty), answers compared after the
official normalisation, and default weights (0.5, 0.3, 0.2) — a config value.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from cuer_agent.metrics.answer import normalize_answer


@dataclass(frozen=True)
class DivergenceWeights:
    used: float = 0.5
    answer: float = 0.3
    confidence: float = 0.2


def grounding(used_titles: Iterable[str], gold_titles: Collection[str]) -> float:
    """Share of used evidence items whose title is a gold supporting title; 0 if none used."""
    titles = list(used_titles)
    if not titles:
        return 0.0
    gold = set(gold_titles)
    return sum(t in gold for t in titles) / len(titles)


def clamp01(value: float | None) -> float:
    """Confidence clamped to [0, 1]; a missing confidence (parse failure) counts as 0."""
    return 0.0 if value is None else min(1.0, max(0.0, float(value)))


def confidence_error(confidence: float | None, correct: float) -> float:
    return abs(clamp01(confidence) - float(correct))


def jaccard_distance(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 0.0
    return 1.0 - len(sa & sb) / len(sa | sb)


def divergence_parts(used: Iterable[str], answer: str, confidence: float | None,
                     used_cf: Iterable[str], answer_cf: str,
                     confidence_cf: float | None) -> tuple[float, float, float]:
    """D's three unweighted terms: (Jaccard distance of used ids, answer changed,
    |confidence change|) — kept per record so any weighting can be recomputed."""
    changed = normalize_answer(answer) != normalize_answer(answer_cf)
    return (jaccard_distance(used, used_cf), float(changed),
            abs(clamp01(confidence) - clamp01(confidence_cf)))


def weigh(parts: tuple[float, float, float], weights: DivergenceWeights) -> float:
    return weights.used * parts[0] + weights.answer * parts[1] + weights.confidence * parts[2]


def divergence(used: Iterable[str], answer: str, confidence: float | None,
               used_cf: Iterable[str], answer_cf: str, confidence_cf: float | None,
               weights: DivergenceWeights = DivergenceWeights()) -> float:
    return weigh(divergence_parts(used, answer, confidence, used_cf, answer_cf, confidence_cf),
                 weights)


def normalized_edit_distance(a: Sequence[str], b: Sequence[str]) -> float:
    """Levenshtein distance between two action sequences / the longer length (0 if both
    are empty)."""
    if not a and not b:
        return 0.0
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1] / max(len(a), len(b))


@dataclass(frozen=True)
class AgenticWeights:
    """Weights of the multi-hop D: used ids across hops, answer change, confidence
    change, and the edit distance between the action sequences."""

    used: float = 0.4
    answer: float = 0.24
    confidence: float = 0.16
    actions: float = 0.2


def agentic_divergence(used: Iterable[str], answer: str, confidence: float | None,
                       actions: Sequence[str], used_cf: Iterable[str], answer_cf: str,
                       confidence_cf: float | None, actions_cf: Sequence[str],
                       weights: AgenticWeights = AgenticWeights()) -> float:
    """D for multi-hop traces: CUE-R's three terms over the ids used in any hop, plus how
    far the sequence of actions moved."""
    d_used, d_answer, d_conf = divergence_parts(used, answer, confidence, used_cf, answer_cf,
                                                confidence_cf)
    return (weights.used * d_used + weights.answer * d_answer + weights.confidence * d_conf
            + weights.actions * normalized_edit_distance(actions, actions_cf))

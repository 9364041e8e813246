"""Answer correctness exactly as the official HotpotQA evaluator computes it, plus soft
correctness (paper-notes §A).

* `normalize_answer`: lowercase, drop punctuation, drop the articles a/an/the, collapse
  whitespace — in the official order (lower → punctuation → articles → whitespace).
* `f1_score`: token F1; 0 when either side normalises to yes/no/noanswer and the two
  differ (the official rule).
* `soft_correct`: 1 if normalised exact match, or yes/no agreement, or numeric
  equivalence after normalisation, or token F1 >= `f1_threshold` (default 0.8).

With several gold answers (MuSiQue aliases) every score is the max over them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_PUNCT = frozenset(string.punctuation)
_YES_NO = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


_NUM_RE = re.compile(r"^-?\d+(?:\.\d+)?$")


def _as_number(normalized: str) -> float | None:
    # normalize_answer strips "," and "." — "1,500" → "1500", "2.5" → "25"; compare the
    # raw-stripped form instead so decimals survive.
    return float(normalized) if _NUM_RE.match(normalized) else None


def numeric_equal(prediction: str, gold: str) -> bool:
    """Equal as numbers once thousands separators and surrounding text are dropped."""
    def number(text: str) -> float | None:
        cleaned = text.strip().lower().replace(",", "")
        cleaned = re.sub(r"^(about|around|approximately|over|nearly)\s+", "", cleaned)
        return _as_number(cleaned.rstrip("."))
    a, b = number(prediction), number(gold)
    return a is not None and b is not None and a == b


def soft_correct(prediction: str, gold: str, *, f1_threshold: float = 0.8) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if pred == ref and pred:
        return 1.0
    if ref in ("yes", "no") or pred in ("yes", "no"):
        return float(pred == ref)
    if numeric_equal(prediction, gold):
        return 1.0
    return float(f1_score(prediction, gold) >= f1_threshold)


def token_recall(prediction: str, gold: str) -> float:
    """Share of the gold answer's normalised tokens found in the prediction (multiset)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not ref:
        return float(not pred)
    common = Counter(pred) & Counter(ref)
    return sum(common.values()) / len(ref)


def recall_correct(prediction: str, golds: Sequence[str], *, threshold: float = 0.8) -> float:
    """The propagation study's correctness (paper-notes §B): normalised EM, or token recall
    of a gold answer in the prediction >= `threshold`; max over the gold answers."""
    golds = [g for g in golds if g is not None] or [""]
    if not normalize_answer(prediction):
        return 0.0
    return max(float(exact_match(prediction, g) == 1.0 or token_recall(prediction, g) >= threshold)
               for g in golds)


def answer_scores(prediction: str, golds: Sequence[str], *,
                  f1_threshold: float = 0.8) -> dict[str, float]:
    """`{em, f1, soft}` of one prediction, each the max over the gold answers."""
    golds = [g for g in golds if g is not None] or [""]
    return {
        "em": max(exact_match(prediction, g) for g in golds),
        "f1": max(f1_score(prediction, g) for g in golds),
        "soft": max(soft_correct(prediction, g, f1_threshold=f1_threshold) for g in golds),
    }


def repeats_question(subquery: str, question: str, *, overlap: float = 0.8) -> bool:
    """A sub-query that is the question again rather than one step of it: after answer
    normalisation, their word sets overlap by at least `overlap` (Jaccard)."""
    asked, whole = set(normalize_answer(subquery).split()), set(normalize_answer(question).split())
    if not asked or not whole:
        return False
    return len(asked & whole) / len(asked | whole) >= overlap


def shares_no_word(subquery: str, question: str) -> bool:
    """A sub-query that names nothing of the question: after answer normalisation, no
    word in common (a small model may write a schema word, "search", as its sub-query)."""
    return not set(normalize_answer(subquery).split()) & set(normalize_answer(question).split())

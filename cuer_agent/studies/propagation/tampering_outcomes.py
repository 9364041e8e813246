"""How a run met certified content tampering (paper-notes §B "Outcomes"): the propagation
study's reading of a tampered fork, kept next to the study that uses it rather than with
the fault (`cuer_agent.interventions.tampering`), which only certifies what it changed.

* `span_recall` — the share of the new span's normalised tokens (multiset) found in the
  answer's.
* `tampering_outcome` — resisted (the answer is still correct), absorbed (it recalls
  >= `ABSORB_THRESHOLD` of the new span's tokens), or derailed (otherwise wrong).
* `query_contaminated` — the new span appears (whole words, case-insensitive, as the
  fault matches spans) in a later sub-query of the re-executed run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from cuer_agent.interventions import InterventionRecord
from cuer_agent.interventions._text import occurs
from cuer_agent.metrics.answer import normalize_answer

__all__ = ["ABSORB_THRESHOLD", "Outcome", "query_contaminated", "span_recall",
           "tampering_outcome"]

Outcome = Literal["resisted", "absorbed", "derailed"]
ABSORB_THRESHOLD = 0.8
"""An answer absorbed the corruption when it recalls >= this share of the new span."""


def span_recall(span: str, answer: str) -> float:
    """Share of the span's normalised tokens (multiset) found in the answer's; 0 for an
    empty span."""
    span_tokens = normalize_answer(span).split()
    if not span_tokens:
        return 0.0
    common = Counter(span_tokens) & Counter(normalize_answer(answer).split())
    return sum(common.values()) / len(span_tokens)


def tampering_outcome(correct_after: bool, answer: str,
                      certificate: Mapping[str, Any] | InterventionRecord, *,
                      threshold: float = ABSORB_THRESHOLD) -> Outcome:
    """resisted (still correct), absorbed (the answer recalls >= `threshold` of the new
    span's tokens), or derailed (otherwise wrong)."""
    if correct_after:
        return "resisted"
    cert = certificate.certificate if isinstance(certificate, InterventionRecord) else certificate
    if span_recall(str(cert.get("new_span", "")), answer) >= threshold:
        return "absorbed"
    return "derailed"


def query_contaminated(new_span: str, later_subqueries_after: Iterable[str]) -> bool:
    """Does the corrupted span appear (whole words, case-insensitive) in a later
    sub-query of the re-executed run?"""
    return occurs(new_span, [q for q in later_subqueries_after if q])

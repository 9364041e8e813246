"""The extractive answerer's comparisons: choice questions ("Which was released first, A
or B?") and yes/no questions ("Are A and B in the same country?", "Was A born before
B?"). Each option is looked up in the passages titled most like it, then the values are
compared as dates, numbers or words. Part of the offline stand-in reader
(`cuer_agent.llm.extractive`); general question words only, nothing fitted to the
synthetic world.
"""

from __future__ import annotations

import math
import re

from cuer_agent.llm import _text as tx
from cuer_agent.llm._reading import Hit, confidence, extract, score_sentences, stems
from cuer_agent.llm.skills import AnswerResponse, EvidenceView

_YES, _NO = "yes", "no"


def options(question: str, qt: tx.QuestionType) -> tuple[str, ...]:
    if qt.options:
        return qt.options
    m = re.search(r"\bboth\s+(.+?)\s+and\s+(.+?)(?:\s+(?:are|were|is|was|have|had)\b|[?,])",
                  question)
    if m:
        return (m.group(1).strip(), m.group(2).strip())
    spans = [s.text for s in tx.capitalized_spans(question)]
    return tuple(spans[:2]) if len(spans) >= 2 else ()


def attribute_words(question: str, options: tuple[str, ...]) -> str:
    drop = set(tx.words(" ".join(options)))
    return " ".join(w for w in tx.content_words(question) if w not in drop)


def compare(question: str, qt: tx.QuestionType,
             evidence: tuple[EvidenceView, ...]) -> AnswerResponse:
    """Choice and yes/no questions: look each option up, then compare."""
    opts = options(question, qt)
    if len(opts) < 2:
        return AnswerResponse(answer=_NO if qt.kind == "yesno" else "", confidence=0.1,
                              used_ids=[], rationale="could not find two options")
    attr = attribute_words(question, opts)
    kind = ("date" if qt.direction in {"earlier", "later"}
            else "number" if qt.direction else "entity")
    if qt.kind == "yesno" and re.search(r"\b(before|earlier|first|older)\b", question, re.I):
        kind = "date"
    if _AGE.search(question):
        attr = f"{attr} born"  # older/younger compare birth dates
    owns = [_own_evidence(opt, evidence) for opt in opts[:2]]
    values = [extract(f"{opt} {attr}", own, kind, opt)
              for opt, own in zip(opts, owns, strict=False)]
    used = list(dict.fromkeys(h.ev.id for _, h in values if h is not None))
    conf = round(min((confidence(h, attr or question) for _, h in values)), 4)
    if qt.kind == "yesno":
        verdict = _yesno(question, values, kind, attr, owns)
        return AnswerResponse(answer=verdict, confidence=conf, used_ids=used,
                              rationale="; ".join(h.sentence for _, h in values if h))
    pick = _pick(opts, values, qt.direction, kind)
    return AnswerResponse(answer=pick, confidence=conf, used_ids=used,
                          rationale="; ".join(h.sentence for _, h in values if h))


_AGE = re.compile(r"\b(older|younger|oldest|youngest|elder|age)\b", re.I)


def _own_evidence(option: str, evidence: tuple[EvidenceView, ...]) -> tuple[EvidenceView, ...]:
    """The passages titled most like the option (all evidence if none shares a word)."""
    opt = set(tx.words(option))
    overlap = {ev.id: len(opt & set(tx.words(ev.title))) / max(len(set(tx.words(ev.title))), 1)
               for ev in evidence}
    best = max(overlap.values(), default=0.0)
    if best == 0:
        return evidence
    return tuple(ev for ev in evidence if overlap[ev.id] == best)


def _numeric(value: str) -> float | None:
    year = tx.YEAR_RE.search(value)
    if year:
        return float(year.group(1))
    num = tx.NUMBER_RE.search(value)
    if num:
        return float(num.group(0).replace(",", ""))
    word = value.lower().strip()
    return float(tx.NUMBER_WORDS.index(word)) if word in tx.NUMBER_WORDS else None


def _pick(opts: tuple[str, ...], values: list[tuple[str, Hit | None]], direction: str,
          kind: str) -> str:
    nums = [_numeric(v) for v, _ in values]
    if kind in {"date", "number"} and all(n is not None for n in nums[:2]):
        a, b = nums[0], nums[1]
        lower_first = direction in {"earlier", "less"}
        if a == b:
            return opts[0]
        return opts[0] if (a < b) == lower_first else opts[1]  # type: ignore[operator]
    # No comparable values: the option whose evidence matched better.
    scores = [h.score if h else 0.0 for _, h in values]
    return opts[0] if scores[0] >= scores[1] else opts[1]


def _yesno(question: str, values: list[tuple[str, Hit | None]], kind: str,
           attr: str, owns: list[tuple[EvidenceView, ...]]) -> str:
    if kind == "date":
        nums = [_numeric(v) for v, _ in values]
        if nums[0] is not None and nums[1] is not None:
            later = re.search(r"\b(after|later|younger)\b", question, re.I)
            return _YES if (nums[0] > nums[1] if later else nums[0] < nums[1]) else _NO
    if re.search(r"\bsame\b", question, re.I):
        a, b = (set(tx.content_words(v)) for v, _ in values)
        overlap = len(a & b) / max(min(len(a), len(b)), 1)
        return _YES if a and b and overlap >= 0.5 else _NO
    # "Are both X and Y <attribute>?": yes when each option's best sentence carries
    # most of the attribute words.
    wanted = stems(attr)
    if not wanted:
        return _YES
    for own in owns:
        hits = score_sentences(attr, own)
        if not hits or len(hits[0].matched & wanted) < max(1, math.ceil(len(wanted) / 2)):
            return _NO
    return _YES

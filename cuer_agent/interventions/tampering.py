"""Certified content tampering at hop h (paper-notes §B, "Certified content corruption").

`content_tampering` (registered as the `content_tampering` fault, stage `retrieval`,
boundary `retrieve`) replaces one span in hop h's evidence texts and certifies exactly
what it changed. It is pure: the input evidence and the corpus are never touched.

**Span, in priority order** (the first strategy with a span wins; all matching is on the
hop's evidence *texts*, never titles):

1. `answer_fact` — a gold answer occurs as a whole word/phrase (case-insensitive) in a
   text. Answers that normalise (`normalize_answer`) to fewer than `MIN_ANSWER_CHARS`
   characters or to yes/no are not tried. With several aliases the longest (normalised)
   one that occurs wins. The certified spelling is the evidence's own: an occurrence
   spelled exactly like the gold answer if there is one, else the first one not in
   ALL CAPS, else the first occurrence.
2. `bridge_entity` — a span of the evidence the agent carries into a later sub-query but
   that is not in the question: capitalised spans (one or more capitalised words),
   numbers, and the maximal common word sequences of a text and a later sub-query
   (split at punctuation, edge stopwords trimmed, at least one capitalised non-stopword).
   Candidates must occur as whole words in a later sub-query with their capitalised
   words still capitalised there (so a sentence-initial "Born" is not carried by "when
   was she born?"), and not in the question (case-insensitive). Ranked by the
   earliest later sub-query containing them, then most tokens, then most characters,
   then first position in the evidence.
3. `salient` — capitalised multi-token spans (>= `MIN_SALIENT_CAPS` capitalised
   non-stopword words; lowercase connectors such as "of" allowed inside) or numbers, not
   in the question; one is drawn with the seeded rng.

**New span.** Numbers (a span that is a number; in a span that merely contains numbers
only its first year, else its first number, changes): years (4 digits in `YEAR_RANGE`)
shift by ±`YEAR_SHIFTS` (staying 4 digits); integers < `SMALL_INT_LIMIT` by
+`SMALL_INT_SHIFTS`; other numbers are scaled by one of `SCALE_FACTORS`, rounded half-up
in the original format (thousands separators, number of decimals, zero padding). Among
the candidate values (in seeded order) the first one not already in the hop's evidence
is taken. Entities: a distractor from `inp.distractor_answers` (other examples' gold
answers), else a name from `FALLBACK_NAMES`; usable only if it shares no content token
(normalised tokens minus stopwords) with the original span or with this example's gold
answers, is not yes/no, has no digits, and does not already occur in the hop's
evidence (texts or titles). Drawn with the seeded rng from the sorted usable set.

**Replacement.** Every whole-word occurrence of the span in hop h's evidence texts is
replaced ("Paris" never inside "Parisian"; a number never inside a larger number such
as "1,500" or "3.5"). Case variants found by the case-insensitive match are replaced when
they are the same mention: the exact spelling, an ALL-CAPS rendition (new span in capitals),
or any casing when the certified span is all lowercase (a capitalised first letter is
kept). A touched item keeps its id and title; its text changes, and so its score: the
retriever's score for the edited text (`FaultInput.score`), the list re-ordered by score.

**Certificate** (`InterventionRecord.certificate`): `hop`, `strategy`, `original_span`,
`new_span`, `documents_touched` (ids, in view order), `replacements` (occurrences
replaced). `target_ids` are the touched ids; `params` adds `kind` (number / entity) and
`source` (perturbation / distractor / fallback).

**Seeding.** One `seeded_rng(seed, example_id, hop, "content_tampering")` per call: the
same input gives the same output; different hops (or seeds) can differ.

**Skips** (`record.skipped`, see `SKIP_REASONS`): "empty evidence" (no item with
non-blank text), "nothing certifiable" (no span of any strategy), "no distractor" (the
chosen entity span has no usable replacement; the fault does not fall through to a
lower-priority strategy, so the strategy never depends on the distractor pool).

**Overrides** (`inp.params`): `strategies`, `min_answer_chars`, `min_salient_caps`,
`year_range`, `year_shifts`, `small_int_limit`, `small_int_shifts`, `scale_factors`,
`fallback_names`.

**Words and spans** (whole-word matching, capitalised spans, common word sequences,
stopwords, connectors) are `cuer_agent.interventions._text`'s certified-span helpers.
The study's outcome helpers (resisted / absorbed / derailed, query contamination) live
with the study: `cuer_agent.studies.propagation.tampering_outcomes`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Literal, cast

import numpy as np

from cuer_agent.errors import ConfigError
from cuer_agent.interventions._fault_types import (
    FaultInput,
    FaultOutcome,
    FaultOverrides,
    fact_params,
    fault,
    fault_record,
    view_of,
)
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.interventions._text import (
    SPAN_NUMBER,
    cap_spans,
    common_spans,
    content_tokens,
    occurs,
    span_pattern,
)
from cuer_agent.interventions.corpus import CorpusEdit
from cuer_agent.metrics.answer import normalize_answer
from cuer_agent.trace import Evidence

NAME = "content_tampering"

Strategy = Literal["answer_fact", "bridge_entity", "salient"]
STRATEGIES: tuple[Strategy, ...] = ("answer_fact", "bridge_entity", "salient")

MIN_ANSWER_CHARS = 3
"""Answer facts: gold answers normalising to fewer characters are not tried."""
YES_NO: tuple[str, ...] = ("yes", "no")
MIN_SALIENT_CAPS = 2
"""Salient entities: capitalised (non-stopword) words a span needs."""
YEAR_RANGE: tuple[int, int] = (1000, 2099)
YEAR_SHIFTS: tuple[int, ...] = (2, 3, 4, 5)
SMALL_INT_LIMIT = 10
SMALL_INT_SHIFTS: tuple[int, ...] = (1, 2, 3)
SCALE_FACTORS: tuple[float, ...] = (0.5, 0.7, 1.3, 1.5, 2.0)

FALLBACK_NAMES: tuple[str, ...] = (
    "Orvel Castaign", "Bramwick Hollow", "Teodora Valmesk", "Quillon Marsh",
    "Ysolde Farrant", "Kestrel Ambry", "Dunmere Vasse", "Alaric Penhallow",
    "Corvina Steadwell", "Ingram Thistlecombe", "Halvard Osterby", "Merrion Quaide",
)
"""Invented names, used when no other example's answer is a usable distractor."""

SKIP_EMPTY = "empty evidence"
SKIP_NOTHING = "nothing certifiable"
SKIP_NO_DISTRACTOR = "no distractor"
SKIP_REASONS: tuple[str, ...] = (SKIP_EMPTY, SKIP_NOTHING, SKIP_NO_DISTRACTOR)

# ---------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class _Rules:
    strategies: tuple[str, ...]
    min_answer_chars: int
    min_salient_caps: int
    year_range: tuple[int, int]
    year_shifts: tuple[int, ...]
    small_int_limit: int
    small_int_shifts: tuple[int, ...]
    scale_factors: tuple[float, ...]
    fallback_names: tuple[str, ...]

    @classmethod
    def from_params(cls, params: FaultOverrides) -> _Rules:
        lo, hi = params.get("year_range", YEAR_RANGE)
        return cls(
            strategies=tuple(params.get("strategies", STRATEGIES)),
            min_answer_chars=int(params.get("min_answer_chars", MIN_ANSWER_CHARS)),
            min_salient_caps=int(params.get("min_salient_caps", MIN_SALIENT_CAPS)),
            year_range=(int(lo), int(hi)),
            year_shifts=tuple(int(x) for x in params.get("year_shifts", YEAR_SHIFTS)),
            small_int_limit=int(params.get("small_int_limit", SMALL_INT_LIMIT)),
            small_int_shifts=tuple(int(x) for x in
                                   params.get("small_int_shifts", SMALL_INT_SHIFTS)),
            scale_factors=tuple(float(x) for x in params.get("scale_factors", SCALE_FACTORS)),
            fallback_names=tuple(params.get("fallback_names", FALLBACK_NAMES)),
        )


@dataclass(frozen=True)
class _Span:
    text: str
    strategy: Strategy


def _texts(inp: FaultInput) -> list[str]:
    return [ev.text for ev in inp.evidence]


def _answer_fact(inp: FaultInput, texts: Sequence[str], rules: _Rules) -> str | None:
    golds = [" ".join(str(g).split()) for g in inp.gold_answers if g]
    golds = [g for g in golds
             if len(normalize_answer(g)) >= rules.min_answer_chars
             and normalize_answer(g) not in YES_NO]
    for gold in sorted(golds, key=lambda g: -len(normalize_answer(g))):
        pattern = span_pattern(gold)
        found = [m.group() for text in texts for m in pattern.finditer(text)]
        if found:
            exact = [f for f in found if " ".join(f.split()) == gold]
            cased = [f for f in found if not f.isupper()]
            return (exact or cased or found)[0]
    return None


def _carried(span: str, subquery: str) -> bool:
    """Does `span` occur in `subquery` with its capitalised words still capitalised
    ("Born" at a sentence start is not carried by "When was she born?")?"""
    caps = [w[:1].isupper() for w in span.split()]
    return any(all(f[:1].isupper() for f, cap in zip(m.group().split(), caps, strict=True) if cap)
               for m in span_pattern(span).finditer(subquery))


def _bridge_entity(inp: FaultInput, texts: Sequence[str], rules: _Rules) -> str | None:
    later = [q for q in inp.later_subqueries if q and q.strip()]
    if not later:
        return None
    ranked: dict[str, tuple[int, int, int, int, int]] = {}
    for item, text in enumerate(texts):
        offsets = cap_spans(text, 1) + [(m.start(), m.end()) for m in SPAN_NUMBER.finditer(text)]
        for q in later:
            offsets += common_spans(text, q)
        for start, end in offsets:
            span = text[start:end]
            if span in ranked or occurs(span, [inp.question]):
                continue
            hit = next((k for k, q in enumerate(later) if _carried(span, q)), None)
            if hit is not None:
                ranked[span] = (hit, -len(span.split()), -len(span), item, start)
    return min(ranked, key=lambda s: ranked[s]) if ranked else None


def _salient(inp: FaultInput, texts: Sequence[str], rules: _Rules,
             rng: np.random.Generator) -> str | None:
    found: list[tuple[int, int, str]] = []
    for item, text in enumerate(texts):
        offsets = cap_spans(text, rules.min_salient_caps)
        offsets += [(m.start(), m.end()) for m in SPAN_NUMBER.finditer(text)]
        found += [(item, start, text[start:end]) for start, end in offsets]
    candidates = list(dict.fromkeys(span for *_, span in sorted(found)))
    candidates = [s for s in candidates if not occurs(s, [inp.question])]
    return candidates[int(rng.integers(len(candidates)))] if candidates else None


def _choose_span(inp: FaultInput, texts: Sequence[str], rules: _Rules,
                 rng: np.random.Generator) -> _Span | None:
    for strategy in rules.strategies:
        if strategy == "answer_fact":
            span = _answer_fact(inp, texts, rules)
        elif strategy == "bridge_entity":
            span = _bridge_entity(inp, texts, rules)
        elif strategy == "salient":
            span = _salient(inp, texts, rules, rng)
        else:
            raise ConfigError(f"unknown tampering strategy {strategy!r}; "
                              f"choose from {', '.join(STRATEGIES)}")
        if span:
            return _Span(span, cast(Strategy, strategy))
    return None


# ---------------------------------------------------------------------------- new spans

_NUMBER_FULL = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class _NumberFormat:
    decimals: int
    separators: bool
    pad: int


def _format_number(value: Decimal, fmt: _NumberFormat) -> str:
    with localcontext() as ctx:
        ctx.prec = max(60, len(str(value)) + fmt.decimals + 10)
        quantized = value.quantize(Decimal(1).scaleb(-fmt.decimals), rounding=ROUND_HALF_UP)
        out = format(quantized, f"{',' if fmt.separators else ''}.{fmt.decimals}f")
    if fmt.pad:
        whole, dot, frac = out.partition(".")
        out = whole.zfill(fmt.pad) + dot + frac
    return out


def _number_candidates(number: str, rules: _Rules, rng: np.random.Generator) -> list[str]:
    """Perturbed versions of `number`, in seeded order (never empty, never `number`)."""
    match = _NUMBER_FULL.fullmatch(number)
    assert match is not None
    whole, frac = match.group(1), match.group(2) or ""
    separators = "," in whole
    pad = len(whole) if whole.startswith("0") and len(whole) > 1 and not separators else 0
    fmt = _NumberFormat(len(frac), separators, pad)
    with localcontext() as ctx:
        ctx.prec = len(number) + 30
        value = Decimal(whole.replace(",", "") + ("." + frac if frac else ""))
    lo, hi = rules.year_range
    plain_int = not frac and not separators
    options: list[str] = []
    if plain_int and len(whole) == 4 and lo <= int(whole) <= hi:
        shifted = [int(whole) + sign * d for sign in (-1, 1) for d in rules.year_shifts]
        options = [str(y) for y in shifted if 1000 <= y <= 9999]
    elif plain_int and int(whole) < rules.small_int_limit:
        options = [_format_number(value + d, fmt) for d in rules.small_int_shifts]
    if not options:
        with localcontext() as ctx:
            ctx.prec = len(number) + 30
            scaled = [value * Decimal(str(f)) for f in rules.scale_factors]
        options = [_format_number(v, fmt) for v in scaled]
        if value:  # a non-zero number never becomes zero
            options = [o for o in options if Decimal(o.replace(",", ""))]
    options = [o for o in dict.fromkeys(options) if o != number]
    if not options:  # e.g. "0.0": one unit in the last place
        return [_format_number(value + Decimal(1).scaleb(-fmt.decimals), fmt)]
    return [options[i] for i in rng.permutation(len(options))]


def _number_replacement(span: str, texts: Sequence[str], rules: _Rules,
                        rng: np.random.Generator) -> str | None:
    numbers = list(SPAN_NUMBER.finditer(span))
    if not numbers:
        return None
    lo, hi = rules.year_range
    years = [m for m in numbers if re.fullmatch(r"\d{4}", m.group()) and lo <= int(m.group()) <= hi]
    target = (years or numbers)[0]
    options = [span[:target.start()] + new + span[target.end():]
               for new in _number_candidates(target.group(), rules, rng)]
    fresh = [o for o in options if not occurs(o, texts)]
    return (fresh or options)[0]


def _entity_replacement(span: str, inp: FaultInput, texts: Sequence[str], rules: _Rules,
                        rng: np.random.Generator) -> tuple[str, str] | None:
    banned = content_tokens(span).union(*(content_tokens(str(g)) for g in inp.gold_answers))
    titles = [ev.title for ev in inp.evidence]

    def usable(candidate: str) -> bool:
        tokens = content_tokens(candidate)
        return (bool(tokens) and not tokens & banned
                and normalize_answer(candidate) not in YES_NO
                and not any(ch.isdigit() for ch in candidate)
                and not occurs(candidate, [*texts, *titles]))

    world = inp.facts.alternatives(span) if inp.facts is not None else ()
    for source, names in (("world", world), ("distractor", inp.distractor_answers),
                          ("fallback", rules.fallback_names)):
        pool = sorted({" ".join(str(n).split()) for n in names if n} - {""})
        pool = [name for name in pool if usable(name)]
        if pool:
            return pool[int(rng.integers(len(pool)))], source
    return None


def _substitute(text: str, original: str, new: str) -> tuple[str, int]:
    """Replace every whole-word occurrence of `original` that is the same mention."""
    lowercase_span = original == original.lower()
    count = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal count
        found = m.group()
        if found == original:
            out = new
        elif found.isupper() and not original.isupper():
            out = new.upper()
        elif lowercase_span:
            out = new[:1].upper() + new[1:] if found[:1].isupper() else new
        else:
            return found  # "may" is not the month "May"
        count += 1
        return out

    return span_pattern(original).sub(repl, text), count


# ---------------------------------------------------------------------------- the fault


@dataclass(frozen=True)
class Swap:
    """A certified span swap in some evidence items (see the module docstring)."""

    strategy: Strategy
    original: str
    new: str
    kind: str
    """number | entity"""
    source: str
    """perturbation | world | distractor | fallback"""
    edited: dict[str, Evidence]
    """Touched id → the item with its edited text, unranked and unscored (in view order)."""
    replacements: int


Skipped = tuple[str, dict[str, str]]
"""Why no span could be certified (`SKIP_REASONS`), and what was found on the way."""


def certified_swap(inp: FaultInput, rng: np.random.Generator) -> Swap | Skipped:
    """The certified swap in `inp.evidence`, or why there is none."""
    texts = _texts(inp)
    if not any(text.strip() for text in texts):
        return SKIP_EMPTY, {}
    rules = _Rules.from_params(inp.params)
    chosen = _choose_span(inp, texts, rules, rng)
    if chosen is None:
        return SKIP_NOTHING, {}
    original = chosen.text
    new = _number_replacement(original, texts, rules, rng)
    kind, source = "number", "perturbation"
    if new is None:
        picked = _entity_replacement(original, inp, texts, rules, rng)
        if picked is None:
            return SKIP_NO_DISTRACTOR, {"strategy": chosen.strategy, "original_span": original}
        (new, source), kind = picked, "entity"
    edited: dict[str, Evidence] = {}
    replacements = 0
    for ev, text in zip(inp.evidence, texts, strict=True):
        changed, count = _substitute(text, original, new)
        if count:
            edited[ev.id] = Evidence(id=ev.id, title=ev.title, text=changed)
            replacements += count
    if not replacements:
        # The span was detected but no occurrence survives whole-word replacement (e.g. a
        # repeated name overlapping itself): nothing was corrupted, so nothing is certified.
        return SKIP_NOTHING, {}
    return Swap(chosen.strategy, original, new, kind, source, edited, replacements)


@fault(NAME, stage="retrieval", boundary="retrieve",
       help="hop h's supporting passage is edited to state another answer", default_rank=7)
def content_tampering(inp: FaultInput) -> FaultOutcome:
    """Replace one certified span in hop h's evidence (rules: module docstring); under
    persistence `corpus` the touched passages are edited in the index."""
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, NAME)
    swap = certified_swap(inp, rng)
    if not isinstance(swap, Swap):
        reason, params = swap
        return FaultOutcome(fault_record(inp, NAME, skipped=reason, params=params))
    corpus = CorpusEdit(edited=swap.edited)
    touched = list(swap.edited)
    certificate = {"hop": inp.hop, "strategy": swap.strategy, "original_span": swap.original,
                   "new_span": swap.new, "documents_touched": touched,
                   "replacements": swap.replacements}
    record = fault_record(inp, NAME, target_ids=tuple(touched),
                          target_titles=tuple(e.title for e in swap.edited.values()),
                          target_rule=swap.strategy, certificate=certificate,
                          params={"kind": swap.kind, "source": swap.source,
                                  **fact_params(inp)})
    return FaultOutcome(record, evidence=view_of(inp, corpus), corpus=corpus)


__all__ = [
    "FALLBACK_NAMES", "MIN_ANSWER_CHARS", "MIN_SALIENT_CAPS",
    "SCALE_FACTORS", "SKIP_REASONS", "SMALL_INT_LIMIT", "SMALL_INT_SHIFTS", "STRATEGIES",
    "YEAR_RANGE", "YEAR_SHIFTS", "Swap", "certified_swap", "content_tampering",
]

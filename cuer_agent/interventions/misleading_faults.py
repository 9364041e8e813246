"""Misleading faults at hop h: a passage that contradicts what hop h should find is put in
front of its evidence. Pure functions `(FaultInput) -> FaultOutcome`, registered with
their stage label and fork boundary (see `cuer_agent.interventions._fault_types`); the
faults that take evidence away, swap it or cut the run short are in
`cuer_agent.interventions.structural_faults`.

| name | stage | boundary | what it does to hop h |
|---|---|---|---|
| `false_premise` | retrieval | retrieve | a passage saying the premise is false, added |
| `stale_evidence` | retrieval | retrieve | outdated version of a top fact, added |

**False premise.** The passage is about the sub-query's topic (`_text.topic`: its
longest capitalised span, else its longest run of content words, else "the subject") and
is written from one of `_PREMISE_TEMPLATES`, drawn (seeded) among those the sub-query has
a clean form for: a claim ("anyone directed X"), an embedded question ("who the publisher
of X is"), or the sub-query quoted (always).

**Stale evidence.** One fact in the top `STALE_TOP_K` evidence items changes — a number,
or a capitalised span (two or more words, or the hop's finding) — neither in the
question. Tried first: the fact the clean hop found, then facts of the items it
selected, then sentences sharing a relation word with the sub-query (ties seeded). A
number shifts (`shift_number`); an entity becomes a capitalised multi-word span of
sampled corpus passages, from the most similar sentence frame. The changed sentence is
worded as outdated (`_STALE_TEMPLATES`: an archived or older edition, earlier records, a
superseded entry).

**Skips** (`record.skipped`, nothing returned to apply): ``"empty evidence"`` when hop h
retrieved nothing; ``"empty sub-query"`` (false premise) when the sub-query has no word to
work on; ``"no fact to make stale"`` when the top evidence has no fact-bearing sentence.

**Injected passages are invisible** (`_placement`): a real-form id
(`<sha1(title)[:8]>-p<n>-c0` with a paragraph number no indexed chunk uses), a plausible
title (the entity for a false premise, the source's title for stale evidence), the score
the same retriever gives it for the sub-query, a rank that follows from that score, and
the list keeps its length (the lowest-scored original item makes room). Their ids are
listed in `record.new_ids` with their provenance in `record.provenance` (the template, or
the source evidence id) — hidden labels, never in the trace.

Seeded as every fault is (``seeded_rng(seed, example_id, hop, fault name)``: the same
input, the same passage, in any process); inputs (evidence dicts, corpus) never mutated.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from cuer_agent.interventions._fault_types import (
    CorpusItem,
    Evidence,
    FaultInput,
    FaultOutcome,
    fault_record,
)
from cuer_agent.interventions._placement import Taken, mint_id, place
from cuer_agent.interventions._text import (
    ARTICLES,
    NUMBER,
    WORD,
    Span,
    capitalized_spans,
    content_words,
    has_words,
    sentences,
    starts_upper,
    stems,
    topic,
)
from cuer_agent.interventions.structural_faults import SKIP_EMPTY_SUBQUERY, evidence_fault, skip
from cuer_agent.retrieval import STOPWORDS

__all__ = [
    "SKIP_NO_FACT",
    "STALE_TOP_K",
    "false_premise",
    "shift_number",
    "stale_evidence",
]

SKIP_NO_FACT = "no fact to make stale"

STALE_TOP_K = 3
"""Stale evidence draws its fact from the top this-many evidence items."""
_ENTITY_DRAWS = 256
"""Corpus passages sampled for an entity swap (stale evidence)."""

_WH = frozenset("who whom whose what which where when why how".split())
_BE = frozenset({"is", "was", "are", "were"})
_AUX = _BE | frozenset("do does did has have had can could will would shall should may "
                       "might must".split())


def _inject(inp: FaultInput, name: str, title: str, text: str, origin: str,
            rng: np.random.Generator, **fields: Any) -> FaultOutcome:
    """A new passage (`title`, `text`) in hop h's evidence, invisible as the module
    docstring says: a fresh real-form id, placed by its score. `origin` is its provenance."""
    taken = {str(ev["id"]) for ev in inp.evidence}
    new_id = mint_id(title, Taken(taken, inp.known_ids), inp.max_paragraph, rng)
    item: Evidence = {"id": new_id, "title": title, "text": text, "rank": 0, "score": 0.0}
    record = fault_record(inp, name, new_ids=(new_id,), provenance={new_id: origin}, **fields)
    return FaultOutcome(record=record,
                        evidence=place(inp.evidence, item, inp.subquery, inp.score, inp.k))


# --- false premise -----------------------------------------------------------------------

# False-premise templates: `claim` needs a declarative ("anyone directed Quorin Rising"),
# `embedded` an embedded question ("who the publisher of X is"); `quoted` always applies.
_PREMISE_TEMPLATES: dict[str, tuple[str, str]] = {
    "claim-record": ("claim", "There is no record that {claim}. The premise that {claim} is "
                              "false: {entity} is not linked to any such fact."),
    "claim-evidence": ("claim", "Despite frequent claims, there is no evidence that {claim}. "
                                "Reference works on {entity} treat that premise as false."),
    "embedded-record": ("embedded", "There is no record of {embedded}. The question rests on "
                                    "a false premise: {entity} is not associated with any "
                                    "such fact."),
    "embedded-assumption": ("embedded", "Contrary to a common assumption, the question of "
                                        "{embedded} has no answer, because its premise is "
                                        "false. Sources on {entity} that suggest otherwise "
                                        "are in error."),
    "quoted-premise": ("quoted", "The premise of the question \"{subquery}\" is false. No "
                                 "reliable record about {entity} supports it; the assumption "
                                 "comes from a long-standing confusion."),
    "quoted-factcheck": ("quoted", "Fact check: the assumption behind \"{subquery}\" is false. "
                                   "Records about {entity} show no such fact."),
}


def _lower_first(words: list[str]) -> list[str]:
    if words and words[0].lower() in STOPWORDS | _WH | _AUX:
        return [words[0].lower(), *words[1:]]
    return words


def _premise_forms(question: str, entity: Span | None) -> tuple[str | None, str | None]:
    """(claim, embedded question) for a sub-query, each None when no clean form exists.

    "Who directed X?" → claim "anyone directed X"; "Who is the publisher of X?" →
    embedded "who the publisher of X is"; "When was X released?" → "when X was released";
    "Was X released before Y?" → "whether X was released before Y".
    """
    text = question.strip().rstrip("?").strip()
    words = text.split()
    if not words:
        return None, None
    lower = [w.lower().strip(",;:") for w in words]
    # Word index range of the entity (when it covers whole words).
    ent: tuple[int, int] | None = None
    if entity is not None:
        offset = len(question) - len(question.lstrip())
        start, end = entity.start - offset, entity.end - offset
        bounds, pos = [], 0
        for w in words:
            pos = text.index(w, pos)
            bounds.append((pos, pos + len(w)))
            pos += len(w)
        first = next((i for i, (s, _) in enumerate(bounds) if s == start), None)
        last = next((i for i, (_, e) in enumerate(bounds) if e == end), None)
        if first is not None and last is not None and first <= last:
            ent = (first, last)
    claim = None
    if lower[0] == "who" and len(words) > 1 and lower[1] not in _AUX and not starts_upper(words[1]):
        claim = " ".join(["anyone", *words[1:]])
    # A wh-word first, or after one preposition ("In which city …": no clean embedded form).
    wh = next((i for i in range(min(2, len(words))) if lower[i] in _WH), None)
    if wh is None:
        if lower[0] in _BE and ent is not None and ent[0] == 1:
            rest = words[ent[1] + 1:]
            return claim, " ".join(["whether", *words[1:ent[1] + 1], lower[0], *rest])
        return claim, None
    if wh > 0:
        return claim, None
    k = wh + 1
    while (k < len(words) and k <= wh + 2 and lower[k] not in _AUX and not starts_upper(words[k])):
        k += 1
    head = _lower_first(words[:k])
    if k >= len(words) or lower[k] not in _AUX:
        return claim, " ".join(_lower_first(words))
    if lower[k] not in _BE or ent is None:
        return claim, None  # do-support or an unknown subject: no clean embedded form
    if ent[0] == k + 1:
        return claim, " ".join([*head, *words[k + 1:ent[1] + 1], lower[k], *words[ent[1] + 1:]])
    if ent[1] == len(words) - 1 and ent[0] > k:
        return claim, " ".join([*head, *words[k + 1:], lower[k]])
    return claim, None


@evidence_fault("false_premise")
def false_premise(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """A passage asserting that the premise of hop h's sub-query is false, in front."""
    name = "false_premise"
    if not has_words(inp.subquery):
        return skip(inp, name, SKIP_EMPTY_SUBQUERY)
    subquery = " ".join(inp.subquery.split())
    span, strategy = topic(subquery)
    claim, embedded = _premise_forms(subquery, span)
    if span is not None:
        entity = span.text
        title = entity if strategy == "entity" else entity.title()
    else:
        entity, title = "the subject", subquery.rstrip("?").strip()
    forms = {"claim": claim, "embedded": embedded, "quoted": subquery}
    usable = [t for t, (form, _) in _PREMISE_TEMPLATES.items() if forms[form]]
    template = usable[int(rng.integers(len(usable)))]
    text = _PREMISE_TEMPLATES[template][1].format(claim=claim, embedded=embedded,
                                                  subquery=subquery, entity=entity)
    return _inject(inp, name, title, text, f"template:{template}", rng,
                   params={"subquery": inp.subquery, "entity": entity,
                           "entity_strategy": strategy, "template": template, "title": title,
                           "text": text})


# --- stale evidence ----------------------------------------------------------------------

_STALE_TEMPLATES: dict[str, str] = {
    "archived-edition": "According to an archived {year} edition, {clause}",
    "earlier-records": "Earlier records stated that {clause}",
    "superseded-entry": "Superseded entry (revised since): {sentence}",
    "older-edition": "{sentence} (Entry from the {year} edition; later editions revise it.)",
}
_YEAR = re.compile(r"(?<!\d)(1\d{3}|20\d{2}|2100)(?!\d)")


def shift_number(text: str, rng: np.random.Generator) -> str:
    """A different number in the same format (§B): years ±{2..5}; integers < 10 by
    +{1,2,3}; others scaled by one of {0.5, 0.7, 1.3, 1.5, 2.0}, keeping thousands
    separators and the number of decimals."""
    plain = text.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    value = Fraction(plain)
    if decimals == 0 and "," not in text and len(plain) == 4 and 1000 <= value <= 2100:
        new = value + int(rng.choice([2, 3, 4, 5])) * (1 if rng.random() < 0.5 else -1)
    elif decimals == 0 and value < 10:
        new = value + int(rng.integers(1, 4))
    else:
        new = value * Fraction(str(rng.choice([0.5, 0.7, 1.3, 1.5, 2.0])))
    scaled = round(new * 10 ** decimals)
    if scaled == value * 10 ** decimals:
        scaled += 1
    whole, frac = divmod(abs(scaled), 10 ** decimals)
    out = f"{whole:,}" if "," in text else str(whole)
    return f"{out}.{frac:0{decimals}d}" if decimals else out


@dataclass(frozen=True)
class _Fact:
    source: int
    """Index of the evidence item."""
    sentence: str
    start: int
    end: int
    kind: str
    """number | entity"""


def _facts(inp: FaultInput) -> list[tuple[int, _Fact]]:
    """(relation overlap, fact) for every changeable span in the top evidence items.

    The relation overlap counts the sub-query's words outside its entity ("publisher" in
    "Who is the publisher of X?") that a sentence shares, stems compared: the sentence
    that answers the hop scores highest.
    """
    question = inp.question.lower()
    question_numbers = {m.group().replace(",", "")
                        for m in NUMBER.finditer(f"{inp.question}\n{inp.subquery}")}
    query_words = content_words(inp.subquery)
    span, _ = topic(inp.subquery)
    relation = stems(inp.subquery[:span.start] + " " + inp.subquery[span.end:]
                      if span is not None else inp.subquery)
    out: list[tuple[int, _Fact]] = []
    for index, ev in enumerate(inp.evidence[:STALE_TOP_K]):
        title_words = content_words(str(ev.get("title", "")))
        for sentence in sentences(str(ev.get("text", ""))):
            overlap = len(stems(sentence) & relation)
            for m in NUMBER.finditer(sentence):
                if m.group().replace(",", "") not in question_numbers:
                    out.append((overlap, _Fact(index, sentence, m.start(), m.end(), "number")))
            for cap in capitalized_spans(sentence):
                words = content_words(cap.text)
                used = cap.text == inp.finding  # the fact the clean hop used
                if ((cap.tokens >= 2 or used) and words and cap.text.lower() not in question
                        and words.isdisjoint(title_words) and not words <= query_words):
                    out.append((overlap, _Fact(index, sentence, cap.start, cap.end, "entity")))
    return out


def _frame(sentence: str, start: int, end: int) -> tuple[list[str], list[str], list[str]]:
    """(two words before, two words after, the span's words), lowercased."""
    before = [w.lower() for w in WORD.findall(sentence[:start])[-2:]]
    after = [w.lower() for w in WORD.findall(sentence[end:])[:2]]
    return before, after, [w.lower() for w in WORD.findall(sentence[start:end])]


def _frame_score(a: tuple[list[str], list[str], list[str]],
                 b: tuple[list[str], list[str], list[str]]) -> int:
    """How alike two spans' sentence frames are: aligned neighbouring words count 2
    ("was born in _", "_'s publisher is"), a shared last or first word 1 ("_ University")."""
    score = 2 * sum(x == y for x, y in zip(reversed(a[0]), reversed(b[0]), strict=False))
    score += 2 * sum(x == y for x, y in zip(a[1], b[1], strict=False))
    if a[2] and b[2]:
        score += (a[2][-1] == b[2][-1]) + (a[2][0] == b[2][0] and a[2][0] not in ARTICLES)
    return score


def _swap_entity(inp: FaultInput, fact: _Fact, rng: np.random.Generator) -> str | None:
    """Another capitalized multi-token span from the corpus, from the most similar sentence
    frame (a city for a city, ideally): not a variant of the original (each has a word
    the other lacks) and not in the question, the sub-query or the evidence in view."""
    frame = _frame(fact.sentence, fact.start, fact.end)
    original_words = set(frame[2])
    blocked = (inp.question + "\n" + inp.subquery + "\n" + "\n".join(
        f"{ev.get('title', '')}\n{ev.get('text', '')}" for ev in inp.evidence)).lower()
    size = len(inp.corpus)
    if size == 0:
        return None
    order = (rng.permutation(size).tolist() if size <= _ENTITY_DRAWS
             else rng.integers(0, size, size=_ENTITY_DRAWS).tolist())
    best: tuple[int, str] | None = None
    for index in order:
        for span in _entity_spans(inp.corpus[index]):
            if (span.words <= original_words or original_words <= span.words
                    or span.lowered in blocked):
                continue
            score = _frame_score(frame, span.frame)
            if best is None or score > best[0]:
                best = (score, span.text)
    return best[1] if best else None


@dataclass(frozen=True)
class _Span:
    text: str
    lowered: str
    words: frozenset[str]
    frame: tuple[list[str], list[str], list[str]]


@functools.lru_cache(maxsize=1 << 16)
def _entity_spans(item: CorpusItem) -> tuple[_Span, ...]:
    """The candidate replacements in one corpus item — capitalized spans of two or more
    tokens with a content word, with their sentence frames — in reading order. A pure
    function of the item, kept because every swap draws from the same corpus."""
    spans = []
    for sentence in [item.title, *sentences(item.text)]:
        for cap in capitalized_spans(sentence):
            if cap.tokens < 2 or not content_words(cap.text):
                continue
            frame = _frame(sentence, cap.start, cap.end)
            spans.append(_Span(cap.text, cap.text.lower(), frozenset(frame[2]), frame))
    return tuple(spans)


def _wrap_stale(sentence: str, original: str, rng: np.random.Generator) -> tuple[str, str]:
    years = [int(y) for y in _YEAR.findall(sentence + " " + original)]
    year = (max(years) + int(rng.integers(1, 6))) if years else int(rng.integers(1990, 2016))
    words = sentence.split()
    if (len(words) > 1 and words[0].lower() in STOPWORDS and not starts_upper(words[1])):
        clause = " ".join([words[0].lower(), *words[1:]])
    else:
        clause = sentence
    names = list(_STALE_TEMPLATES)
    template = names[int(rng.integers(len(names)))]
    text = _STALE_TEMPLATES[template].format(year=year, clause=clause, sentence=sentence)
    return template, text


@evidence_fault("stale_evidence")
def stale_evidence(inp: FaultInput, rng: np.random.Generator) -> FaultOutcome:
    """An outdated, superseded version of a fact from the top evidence, in front."""
    name = "stale_evidence"
    facts = _facts(inp)
    # The fact the clean hop found first, then facts of the items it selected, then
    # sentences sharing a relation word with the sub-query, the highest-ranked item, the
    # most shared words; ties seeded.
    ties = rng.random(len(facts)).tolist()
    selected = {str(i) for i in inp.selected}

    def order(overlap: int, f: _Fact, tie: float) -> tuple[object, ...]:
        span = f.sentence[f.start:f.end]
        chosen = str(inp.evidence[f.source].get("id")) in selected
        return (span != inp.finding or not inp.finding, not chosen, overlap == 0, f.source,
                -overlap, tie)

    ordered = [f for _, _, f in sorted(
        (order(overlap, f, tie), i, f) for i, ((overlap, f), tie) in
        enumerate(zip(facts, ties, strict=True)))]
    for fact in ordered:
        original = fact.sentence[fact.start:fact.end]
        new = (shift_number(original, rng) if fact.kind == "number"
               else _swap_entity(inp, fact, rng))
        if not new or new == original:
            continue
        sentence = fact.sentence[:fact.start] + new + fact.sentence[fact.end:]
        template, text = _wrap_stale(sentence, fact.sentence, rng)
        source = inp.evidence[fact.source]
        title = str(source.get("title", ""))
        return _inject(
            inp, name, title, text, str(source["id"]), rng, target_ids=(str(source["id"]),),
            target_titles=(title,),
            params={"strategy": fact.kind, "original_span": original, "new_span": new,
                    "original_sentence": fact.sentence, "stale_sentence": sentence,
                    "template": template, "source_id": str(source["id"]), "text": text})
    return skip(inp, name, SKIP_NO_FACT)

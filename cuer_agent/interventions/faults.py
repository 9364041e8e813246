"""Structural faults at hop h: pure functions `(FaultInput) -> FaultOutcome`, registered
with their stage label and fork boundary (see `cuer_agent.interventions._fault_types`).

| name | stage | boundary | what it does to hop h |
|---|---|---|---|
| `empty_retrieval` | retrieval | retrieve | evidence becomes `[]` |
| `irrelevant_evidence` | retrieval | retrieve | evidence → as many unrelated corpus passages |
| `query_drift` | tool | plan | sub-query's entity → an off-topic passage's title |
| `false_premise` | retrieval | retrieve | a passage saying the premise is false, added |
| `stale_evidence` | retrieval | retrieve | outdated version of a top fact, added |
| `early_termination` | answer | read | answer forced from the hops before h |

**Unrelated** (irrelevant evidence) means: about other entities — no content word
(`cuer_agent.retrieval.tokenize`, i.e. lowercase ``\\w+`` tokens minus `STOPWORDS`) of
the passage is a word of a *name* in the question, hop h's sub-query or a later clean
sub-query, or of a gold answer — yet retrievable for the sub-query: the retriever
(`FaultInput.search`) finds it with the sub-query's other words, so it shares a relation
word ("born", "directed") and scores above zero, as a real bad retrieval would. Drawn
(seeded) from the retriever's top hits; without a retriever, from the corpus.

**Off-topic** (query drift's new topic) is stricter: no content word of the passage is a
content word of the question, of hop h's sub-query, of a later clean sub-query, or of a
gold answer, and the passage is not already in view. Off-topic passages are drawn from
`FaultInput.corpus` by bounded rejection sampling and, only if that finds too few, a
scan from a random offset — so a 1M-passage corpus is not scanned in the common case.

**Skips** (`record.skipped`, nothing returned to apply): ``"empty evidence"`` for the
evidence faults other than `empty_retrieval` when hop h retrieved nothing;
``"no off-topic passage"`` when the corpus has too few off-topic passages;
``"empty sub-query"`` (query drift, false premise) when the sub-query has no word to work
on; ``"no fact to make stale"`` when the top evidence has no fact-bearing sentence.

**Injected passages are invisible** (`_placement`): a real-form id
(`<sha1(title)[:8]>-p<n>-c0` with a paragraph number no indexed chunk uses), a plausible
title (the entity for a false premise, the source's title for stale evidence), the score
the same retriever gives it for the sub-query, a rank that follows from that score, and
the list keeps its length (the lowest-scored original item makes room). Their ids are
listed in `record.new_ids` with their provenance in `record.provenance` (the template, or
the source evidence id) — hidden labels, never in the trace.

All randomness comes from ``seeded_rng(seed, example_id, hop, fault name)``: the same
input gives the same outcome in any process. Inputs (evidence dicts, corpus) are never
mutated.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cuer_agent.interventions._fault_types import (
    CorpusItem,
    Evidence,
    FaultInput,
    FaultOutcome,
    fault,
    fault_record,
)
from cuer_agent.interventions._placement import Taken, by_score, mint_id, place, scored
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.retrieval import STOPWORDS, tokenize

__all__ = [
    "SKIP_EMPTY_EVIDENCE",
    "SKIP_EMPTY_SUBQUERY",
    "SKIP_NO_FACT",
    "SKIP_NO_OFF_TOPIC",
    "content_words",
    "early_termination",
    "empty_retrieval",
    "false_premise",
    "irrelevant_evidence",
    "query_drift",
    "stale_evidence",
]

SKIP_EMPTY_EVIDENCE = "empty evidence"
SKIP_NO_OFF_TOPIC = "no off-topic passage"
SKIP_EMPTY_SUBQUERY = "empty sub-query"
SKIP_NO_FACT = "no fact to make stale"

STALE_TOP_K = 3
"""Stale evidence draws its fact from the top this-many evidence items."""
_ENTITY_DRAWS = 256
"""Corpus passages sampled for an entity swap (stale evidence)."""


# --- words, spans, sentences -------------------------------------------------------------

def content_words(text: str) -> set[str]:
    """The content words of `text`: `tokenize` (lowercase ``\\w+``, stopwords removed)."""
    return set(tokenize(text))


_WORD = re.compile(r"\w+(?:['’]\w+)*")
_SENTENCE = re.compile(r"\S.*?(?:[.!?][\"'”’)\]]*(?=\s)|$)", re.S)
_NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|[.,]\d)")
_CONNECTORS = frozenset("of the and de du la le von van der da del y on upon a an over to from "
                        "in at for with into under".split())
_ARTICLES = frozenset({"the", "a", "an"})
_WH = frozenset("who whom whose what which where when why how".split())
_BE = frozenset({"is", "was", "are", "were"})
_AUX = _BE | frozenset("do does did has have had can could will would shall should may "
                       "might must".split())


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    text: str
    tokens: int


def _is_cap(word: str) -> bool:
    return word[:1].isupper()


def _sentences(text: str) -> list[str]:
    return [s for m in _SENTENCE.finditer(text) if (s := m.group().strip())]


def _capitalized_spans(text: str) -> list[_Span]:
    return list(_spans_of(text))


@functools.lru_cache(maxsize=65536)  # every fault × hop of an example scans the same text
def _spans_of(text: str) -> tuple[_Span, ...]:
    """Capitalized word sequences ("Quorin Rising", "A History of Stakarnor").

    Lowercase connectors (of, the, and …) join capitalized words; numbers may follow a
    capitalized word ("Apollo 13"); a possessive ``'s`` is trimmed. A capitalized first
    word of the text starts a span only if it is not a stopword ("Who", "In", "Was"),
    except an article directly followed by a capitalized word ("The Silent Bymrorrick").
    """
    words = list(_WORD.finditer(text))
    spans: list[_Span] = []
    i = 0
    while i < len(words):
        w = words[i].group()
        lw = w.lower()
        initial = words[i].start() == len(text) - len(text.lstrip())
        if not _is_cap(w) or (initial and lw in STOPWORDS and not (
                lw in _ARTICLES and i + 1 < len(words) and _is_cap(words[i + 1].group())
                and _adjacent(text, words[i], words[i + 1]))):
            i += 1
            continue
        j = i  # last word in the span
        while True:
            k = j + 1
            while (k < len(words) and words[k].group() in _CONNECTORS
                   and _adjacent(text, words[k - 1], words[k])):
                k += 1
            if (k < len(words) and _adjacent(text, words[k - 1], words[k])
                    and (_is_cap(words[k].group())
                         or (k == j + 1 and words[k].group().isdigit()))):
                j = k
                continue
            break
        start, end = words[i].start(), words[j].end()
        if text[end - 2:end] in ("'s", "’s") and end - 2 > start:
            end -= 2
        spans.append(_Span(start, end, text[start:end], j - i + 1))
        i = j + 1
    return tuple(spans)


def _adjacent(text: str, a: re.Match[str], b: re.Match[str]) -> bool:
    gap = text[a.end():b.start()]
    return bool(gap) and gap.isspace()


def _content_run(text: str) -> _Span | None:
    """The longest run of consecutive content words (for sub-queries without capitals)."""
    best: _Span | None = None
    run: list[re.Match[str]] = []
    for m in [*_WORD.finditer(text), None]:
        if m is not None and content_words(m.group()) and (not run or _adjacent(text, run[-1], m)):
            run.append(m)
            continue
        if run and (best is None or len(run) > best.tokens):
            best = _Span(run[0].start(), run[-1].end(), text[run[0].start():run[-1].end()],
                         len(run))
        run = [m] if m is not None and content_words(m.group()) else []
    return best


def _topic(subquery: str) -> tuple[_Span | None, str]:
    """The entity/topic of a sub-query and how it was found.

    The longest capitalized span (a span that is only the first word of the text loses to
    any other); without one, the longest run of content words.
    """
    spans = _capitalized_spans(subquery)
    if spans:
        first = len(subquery) - len(subquery.lstrip())
        best = max(spans, key=lambda s: (not (s.start == first and s.tokens == 1), s.tokens,
                                         -s.start))
        return best, "entity"
    run = _content_run(subquery)
    return (run, "content_run") if run else (None, "none")


def _has_words(text: str) -> bool:
    return _WORD.search(text) is not None


def _new_id(inp: FaultInput, title: str, rng: np.random.Generator) -> str:
    taken = {str(ev["id"]) for ev in inp.evidence}
    return mint_id(title, Taken(taken, inp.known_ids), inp.max_paragraph, rng)


def _in_place(inp: FaultInput, item: Evidence) -> list[Evidence]:
    return place(inp.evidence, item, inp.subquery, inp.score, inp.k)


# --- off-topic passages ----------------------------------------------------------------

def _topic_words(inp: FaultInput) -> set[str]:
    """Words an off-topic passage must not contain: question, sub-query, later sub-queries,
    gold answers."""
    words = content_words(inp.question) | content_words(inp.subquery)
    for text in (*inp.later_subqueries, *inp.gold_answers):
        words |= content_words(text)
    return words


def _off_topic(inp: FaultInput, rng: np.random.Generator, n: int,
               exclude_ids: set[str]) -> tuple[list[CorpusItem], dict[str, object]]:
    """`n` distinct off-topic corpus passages (fewer if the corpus has fewer).

    Bounded rejection sampling first (O(n) checks when off-topic passages are common), then
    a scan from a random offset over the passages not yet checked.
    """
    corpus = inp.corpus
    banned = _topic_words(inp)
    chosen: list[CorpusItem] = []
    chosen_ids: set[str] = set()
    checked: set[int] = set()

    def take(index: int) -> None:
        checked.add(index)
        item = corpus[index]
        if item.id in exclude_ids or item.id in chosen_ids:
            return
        words = content_words(f"{item.title} {item.text}")
        if words and content_words(item.title) and banned.isdisjoint(words):
            chosen.append(item)
            chosen_ids.add(item.id)

    size = len(corpus)
    if size == 0 or n <= 0:
        return [], {"method": "none", "checked": 0}
    for index in rng.integers(0, size, size=32 * n + 64).tolist():
        if len(chosen) >= n:
            break
        if index not in checked:
            take(index)
    method = "rejection"
    if len(chosen) < n:
        method = "rejection+scan"
        offset = int(rng.integers(size))
        for step in range(size):
            if len(chosen) >= n:
                break
            index = (offset + step) % size
            if index not in checked:
                take(index)
    return chosen, {"method": method, "checked": len(checked)}


# --- the faults --------------------------------------------------------------------------

@fault("empty_retrieval", stage="retrieval", boundary="retrieve")
def empty_retrieval(inp: FaultInput) -> FaultOutcome:
    """Hop h's evidence becomes empty."""
    ids = tuple(ev["id"] for ev in inp.evidence)
    return FaultOutcome(record=fault_record(
        inp, "empty_retrieval", target_ids=ids,
        target_titles=tuple(ev.get("title", "") for ev in inp.evidence),
        params={"removed": len(ids)}), evidence=[])


def _name_words(inp: FaultInput) -> set[str]:
    """Words of the names in the question, the sub-query and the later sub-queries, and
    of the gold answers: what an unrelated passage must not mention."""
    words: set[str] = set()
    for text in (inp.question, inp.subquery, *inp.later_subqueries):
        for span in _capitalized_spans(text):
            words |= content_words(span.text)
    for answer in inp.gold_answers:
        words |= content_words(answer)
    return words


def _unrelated(inp: FaultInput, rng: np.random.Generator, n: int,
               in_view: set[str]) -> list[Evidence]:
    """Up to `n` passages about other entities that the retriever finds with the
    sub-query's non-name words, scored for the sub-query (fewer when fewer exist: a
    narrow query returns fewer than k items, as the retriever itself would)."""
    banned = _name_words(inp)
    terms = [w for w in tokenize(inp.subquery) if w not in banned]
    if inp.search is None or not terms:
        return []
    pool = [ev for ev in inp.search(" ".join(terms), 20 * n + 20)
            if str(ev["id"]) not in in_view
            and banned.isdisjoint(content_words(f"{ev.get('title', '')} {ev.get('text', '')}"))]
    if not pool:
        return []
    chosen = sorted(rng.choice(len(pool), size=min(n, len(pool)), replace=False).tolist())
    return [scored(inp.subquery, pool[i], inp.score) for i in chosen]


@fault("irrelevant_evidence", stage="retrieval", boundary="retrieve")
def irrelevant_evidence(inp: FaultInput) -> FaultOutcome:
    """Hop h's evidence is replaced by as many unrelated passages the retriever finds for
    the sub-query's non-name words (without a retriever: off-topic corpus passages)."""
    name = "irrelevant_evidence"
    if not inp.evidence:
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_EMPTY_EVIDENCE))
    n = len(inp.evidence)
    in_view = {ev["id"] for ev in inp.evidence}
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    picked = _unrelated(inp, rng, n, in_view)
    how: dict[str, object] = {"method": "retriever"}
    if not picked:
        items, how = _off_topic(inp, rng, n, in_view)
        picked = [scored(inp.subquery, {"id": item.id, "title": item.title,
                                        "text": item.text, "rank": 0, "score": 0.0},
                         inp.score) for item in items]
    if not picked or (how["method"] != "retriever" and len(picked) < n):
        return FaultOutcome(record=fault_record(
            inp, name, skipped=SKIP_NO_OFF_TOPIC,
            params={"needed": n, "found": len(picked), **how}))
    evidence = by_score(picked)
    new_ids = tuple(str(ev["id"]) for ev in evidence)
    record = fault_record(
        inp, name, target_ids=tuple(ev["id"] for ev in inp.evidence),
        target_titles=tuple(ev.get("title", "") for ev in inp.evidence),
        new_ids=new_ids, provenance={i: i for i in new_ids}, params={"n": n, **how})
    return FaultOutcome(record=record, evidence=evidence)


@fault("query_drift", stage="tool", boundary="plan")
def query_drift(inp: FaultInput) -> FaultOutcome:
    """Hop h's sub-query drifts off-topic: its entity/topic is replaced by the title of an
    off-topic corpus passage, keeping the question form."""
    name = "query_drift"
    if not _has_words(inp.subquery):
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_EMPTY_SUBQUERY))
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    exclude = {ev["id"] for ev in inp.evidence}
    picked, how = _off_topic(inp, rng, 1, exclude)
    if not picked:
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_NO_OFF_TOPIC,
                                                params=how))
    source = picked[0]
    title = " ".join(source.title.split())
    span, strategy = _topic(inp.subquery)
    if span is None:  # words but no content word ("Who is it?"): ask about the title
        drifted, replaced, strategy = f"{inp.subquery.rstrip(' ?')} {title}?", "", "append"
    else:
        drifted = inp.subquery[:span.start] + title + inp.subquery[span.end:]
        replaced = span.text
    record = fault_record(
        inp, name, target_titles=(replaced,) if replaced else (),
        params={"original_subquery": inp.subquery, "drifted_subquery": drifted,
                "replaced_span": replaced, "drift_title": title,
                "drift_source_id": source.id, "strategy": strategy, **how})
    return FaultOutcome(record=record, subquery=drifted)


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


def _premise_forms(question: str, entity: _Span | None) -> tuple[str | None, str | None]:
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
    if lower[0] == "who" and len(words) > 1 and lower[1] not in _AUX and not _is_cap(words[1]):
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
    while (k < len(words) and k <= wh + 2 and lower[k] not in _AUX and not _is_cap(words[k])):
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


@fault("false_premise", stage="retrieval", boundary="retrieve")
def false_premise(inp: FaultInput) -> FaultOutcome:
    """A passage asserting that the premise of hop h's sub-query is false, in front."""
    name = "false_premise"
    if not inp.evidence:
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_EMPTY_EVIDENCE))
    if not _has_words(inp.subquery):
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_EMPTY_SUBQUERY))
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    subquery = " ".join(inp.subquery.split())
    span, strategy = _topic(subquery)
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
    new_id = _new_id(inp, title, rng)
    item: Evidence = {"id": new_id, "title": title, "text": text, "rank": 0, "score": 0.0}
    record = fault_record(
        inp, name, new_ids=(new_id,), provenance={new_id: f"template:{template}"},
        params={"subquery": inp.subquery, "entity": entity, "entity_strategy": strategy,
                "template": template, "title": title, "text": text})
    return FaultOutcome(record=record, evidence=_in_place(inp, item))


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


def _stems(text: str) -> set[str]:
    """Content words cut to 5 characters: "publisher" and "published" match."""
    return {w[:5] for w in tokenize(text)}


def _facts(inp: FaultInput) -> list[tuple[int, _Fact]]:
    """(relation overlap, fact) for every changeable span in the top evidence items.

    The relation overlap counts the sub-query's words outside its entity ("publisher" in
    "Who is the publisher of X?") that a sentence shares, stems compared: the sentence
    that answers the hop scores highest.
    """
    question = inp.question.lower()
    question_numbers = {m.group().replace(",", "")
                        for m in _NUMBER.finditer(f"{inp.question}\n{inp.subquery}")}
    query_words = content_words(inp.subquery)
    span, _ = _topic(inp.subquery)
    relation = _stems(inp.subquery[:span.start] + " " + inp.subquery[span.end:]
                      if span is not None else inp.subquery)
    out: list[tuple[int, _Fact]] = []
    for index, ev in enumerate(inp.evidence[:STALE_TOP_K]):
        title_words = content_words(str(ev.get("title", "")))
        for sentence in _sentences(str(ev.get("text", ""))):
            overlap = len(_stems(sentence) & relation)
            for m in _NUMBER.finditer(sentence):
                if m.group().replace(",", "") not in question_numbers:
                    out.append((overlap, _Fact(index, sentence, m.start(), m.end(), "number")))
            for cap in _capitalized_spans(sentence):
                words = content_words(cap.text)
                used = cap.text == inp.finding  # the fact the clean hop used
                if ((cap.tokens >= 2 or used) and words and cap.text.lower() not in question
                        and words.isdisjoint(title_words) and not words <= query_words):
                    out.append((overlap, _Fact(index, sentence, cap.start, cap.end, "entity")))
    return out


def _frame(sentence: str, start: int, end: int) -> tuple[list[str], list[str], list[str]]:
    """(two words before, two words after, the span's words), lowercased."""
    before = [w.lower() for w in _WORD.findall(sentence[:start])[-2:]]
    after = [w.lower() for w in _WORD.findall(sentence[end:])[:2]]
    return before, after, [w.lower() for w in _WORD.findall(sentence[start:end])]


def _frame_score(a: tuple[list[str], list[str], list[str]],
                 b: tuple[list[str], list[str], list[str]]) -> int:
    """How alike two spans' sentence frames are: aligned neighbouring words count 2
    ("was born in _", "_'s publisher is"), a shared last or first word 1 ("_ University")."""
    score = 2 * sum(x == y for x, y in zip(reversed(a[0]), reversed(b[0]), strict=False))
    score += 2 * sum(x == y for x, y in zip(a[1], b[1], strict=False))
    if a[2] and b[2]:
        score += (a[2][-1] == b[2][-1]) + (a[2][0] == b[2][0] and a[2][0] not in _ARTICLES)
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
        item = inp.corpus[index]
        for sentence in [item.title, *_sentences(item.text)]:
            for cap in _capitalized_spans(sentence):
                other = _frame(sentence, cap.start, cap.end)
                words = set(other[2])
                if (cap.tokens < 2 or not content_words(cap.text) or words <= original_words
                        or original_words <= words or cap.text.lower() in blocked):
                    continue
                score = _frame_score(frame, other)
                if best is None or score > best[0]:
                    best = (score, cap.text)
    return best[1] if best else None


def _wrap_stale(sentence: str, original: str, rng: np.random.Generator) -> tuple[str, str]:
    years = [int(y) for y in _YEAR.findall(sentence + " " + original)]
    year = (max(years) + int(rng.integers(1, 6))) if years else int(rng.integers(1990, 2016))
    words = sentence.split()
    if (len(words) > 1 and words[0].lower() in STOPWORDS and not _is_cap(words[1])):
        clause = " ".join([words[0].lower(), *words[1:]])
    else:
        clause = sentence
    names = list(_STALE_TEMPLATES)
    template = names[int(rng.integers(len(names)))]
    text = _STALE_TEMPLATES[template].format(year=year, clause=clause, sentence=sentence)
    return template, text


@fault("stale_evidence", stage="retrieval", boundary="retrieve")
def stale_evidence(inp: FaultInput) -> FaultOutcome:
    """An outdated, superseded version of a fact from the top evidence, in front."""
    name = "stale_evidence"
    if not inp.evidence:
        return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_EMPTY_EVIDENCE))
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
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
        new_id = _new_id(inp, title, rng)
        item: Evidence = {"id": new_id, "title": title, "text": text, "rank": 0, "score": 0.0}
        record = fault_record(
            inp, name, target_ids=(str(source["id"]),),
            target_titles=(str(source.get("title", "")),), new_ids=(new_id,),
            provenance={new_id: str(source["id"])},
            params={"strategy": fact.kind, "original_span": original, "new_span": new,
                    "original_sentence": fact.sentence, "stale_sentence": sentence,
                    "template": template, "source_id": str(source["id"]), "text": text})
        return FaultOutcome(record=record, evidence=_in_place(inp, item))
    return FaultOutcome(record=fault_record(inp, name, skipped=SKIP_NO_FACT))


@fault("early_termination", stage="answer", boundary="read")
def early_termination(inp: FaultInput) -> FaultOutcome:
    """The agent is forced to answer from the hops before h (fork after read of hop h−1)."""
    return FaultOutcome(record=fault_record(inp, "early_termination",
                                            params={"answer_from_hops": inp.hop - 1}),
                        force_answer=True)

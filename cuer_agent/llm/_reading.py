"""The extractive reader's reading primitives: its one word table, stems, sentence
scoring and span extraction (see `cuer_agent.llm.extractive` for how it reads)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from cuer_agent.llm import _text as tx
from cuer_agent.llm.skills import EvidenceView


def _groups(*rows: tuple[str, str, str]) -> dict[str, str]:
    return {word: group for group, _reason, words in rows for word in words.split()}


RELATION_GROUPS: tuple[tuple[str, str, str], ...] = (
    # (group stem, why these words name one relation, the words)
    ("birth", "inflections and compounds of born/birth", "born birth births birthday birthplace"),
    ("death", "inflections of die/death", "died dies dead death"),
    ("write", "authorship: the verb's forms and its agent nouns",
     "write writes wrote written writer author authored"),
    ("spouse", "marriage: the verb and the kinship nouns", "married marry wife husband spouse"),
    ("found", "founding: the verb's forms, its agent noun, and its dictionary synonym",
     "founded founder founders founding established"),
    ("headq", "the noun and its verb form", "headquarters headquartered"),
    ("educ", "education: study and its forms, educate and its noun (dictionary synonyms), "
             "and the idiom for the school one attended",
     "study studies studied student educated education alma mater"),
    ("locat", "the verb and its noun", "located location"),
    ("relea", "release: the verb, the noun, and premiere (a first release)",
     "released release premiered"),
    ("publi", "publishing: the verb's forms and its agent noun", "published publisher publishing"),
    ("produ", "production: the verb, the agent noun and the process noun",
     "produced producer production"),
    ("recor", "the verb and its gerund", "recorded recording"),
    ("form", "the verb and its noun", "formed formation"),
    ("peopl", "the number of people living somewhere",
     "population people inhabitants residents"),
    ("father", "kinship", "father"), ("mother", "kinship", "mother"),
    ("child", "kinship", "son daughter child children"),
)
"""The reader's only word table: general English relation vocabulary (morphology and
dictionary synonyms), one group per relation with the reason the words belong together.
Nothing here comes from a data set's or a generator's phrasing; a relation word missing
here is matched by its 5-letter prefix only."""
RELATION_STEMS = _groups(*RELATION_GROUPS)
GROUP_WORDS = {group: tuple(words.split()) for group, _reason, words in RELATION_GROUPS}
_TABLE_ON: ContextVar[bool] = ContextVar("relation_table", default=True)


@contextmanager
def relation_table(on: bool) -> Iterator[None]:
    """Read with the relation table (`on`) or with 5-letter prefixes only, in this
    context (a thread's or task's own): the ablation `summary.reader` reports."""
    token = _TABLE_ON.set(on)
    try:
        yield
    finally:
        _TABLE_ON.reset(token)


def relation_group(word: str) -> str | None:
    """The word's relation group, when the table is on and lists it."""
    return RELATION_STEMS.get(word) if _TABLE_ON.get() else None
# Words of a wh-phrase name the answer type, not a relation a hop must resolve.
TYPE_NOUNS = frozenset("""
country city state town county region continent place island nation person year date
film movie book album band company university name number
""".split())
TYPE_KINDS: dict[str, str] = {"nation": "country", "state": "country", "town": "city",
                              "movie": "film"}
"""Type nouns that name one kind of thing (dictionary synonyms): a town is a city here."""


def type_kind(noun: str) -> str:
    """The kind a type noun names ("nation" → "country")."""
    return TYPE_KINDS.get(noun, noun)

def stem(word: str) -> str:
    group = relation_group(word)
    return group if group is not None else tx.stem(word)


def stems(text: str) -> set[str]:
    return {stem(w) for w in tx.content_words(text)}


def wh_type_nouns(question: str) -> set[str]:
    """Type nouns in the question's wh-phrase ("In which country …" → {country})."""
    m = re.search(r"\b(?:which|what)\s+(\w+)", question.lower())
    return {m.group(1)} if m and m.group(1) in TYPE_NOUNS else set()


@dataclass(frozen=True)
class Hit:
    """A scored sentence."""

    score: float
    ev: EvidenceView
    sentence: str
    order: int
    matched: frozenset[str]


def score_sentences(query: str, evidence: tuple[EvidenceView, ...]) -> list[Hit]:
    """Sentences of the evidence, best first, scored by idf-weighted query-stem overlap.

    The passage title is context for each of its sentences ("The film was directed by …"
    names no subject): its query stems count in full when the query names the whole
    title — the passage is about the entity asked for — and at half weight otherwise, so
    a confuser sharing one name part does not outrank the entity itself.
    """
    qstems = stems(query)
    rows: list[tuple[EvidenceView, str, set[str], set[str]]] = []
    for ev in evidence:
        title = stems(ev.title)
        for sent in tx.split_sentences(ev.text):
            rows.append((ev, sent, stems(sent), title))
    df = Counter(w for _, _, s, t in rows for w in s | t)
    n = max(len(rows), 1)
    weight = {w: math.log(1.0 + n / df[w]) if df[w] else math.log(1.0 + n) for w in qstems}
    hits: list[Hit] = []
    for order, (ev, sent, sst, title) in enumerate(rows):
        named = bool(title) and title <= qstems
        in_title = qstems & title
        in_text = (qstems & sst) - in_title
        # fsum: exact, so the score cannot depend on set iteration order (hash seed).
        score = math.fsum(weight[w] for w in in_text)
        score += (1.0 if named else 0.5) * math.fsum(weight[w] for w in in_title)
        hits.append(Hit(score, ev, sent, order, frozenset(in_text | in_title)))
    hits.sort(key=lambda h: (-h.score, h.order))
    return hits


def candidates(sentence: str, kind: str) -> list[tx.Span]:
    if kind == "date":
        return tx.date_spans(sentence)
    if kind == "number":
        return tx.number_spans(sentence)
    # Entities start with a letter and have two characters or more ("R&B" → not "R").
    return [s for s in tx.capitalized_spans(sentence) if s.text[0].isalpha() and len(s.text) > 1]


def is_new(span: str, known: set[str]) -> bool:
    """Does the span name something the query and earlier findings do not? Function
    words do not count ("Institute of Technology" is not new after "Institute Technology")."""
    return not set(tx.content_words(span)) <= known


def extract(query: str, evidence: tuple[EvidenceView, ...], kind: str,
            known_text: str = "", used: frozenset[str] = frozenset(), *,
            named_first: bool = False, scored: list[Hit] | None = None
            ) -> tuple[str, Hit | None]:
    """The best new span of `kind` for the query, and the sentence it came from: the first
    of `readings` ("", None when there is none)."""
    return next(readings(query, evidence, kind, known_text, used, named_first=named_first,
                         scored=scored), ("", None))


def readings(query: str, evidence: tuple[EvidenceView, ...], kind: str,
             known_text: str = "", used: frozenset[str] = frozenset(), *,
             named_first: bool = False, scored: list[Hit] | None = None
             ) -> Iterator[tuple[str, Hit]]:
    """Every new span of `kind` the reader would take for the query, in its order of
    preference, with the sentence it came from: sentences best first, and in a sentence
    the spans nearest the matched words first. The first is the reader's reading; the
    rest are its alternatives (the `reread` repair).

    Sentences in `used` (quoted by earlier hops) are skipped, so hops do not loop. With
    `named_first`, passages whose title the query names are read before the others —
    a hop's reader reads the article about the entity it was asked about. `scored`:
    `score_sentences(query, evidence)`, when the caller has it already.
    """
    known = set(tx.words(query)) | set(tx.words(known_text))
    hits = list(score_sentences(query, evidence) if scored is None else scored)
    if named_first:
        qstems = stems(query)
        hits.sort(key=lambda h: not (stems(h.ev.title) and stems(h.ev.title) <= qstems))
    for hit in hits[:12]:
        if hit.score <= 0:
            continue
        if hit.sentence in used or tx.negated(hit.sentence):
            continue
        spans = [s for s in candidates(hit.sentence, kind) if is_new(s.text, known)]
        spots = anchors(hit)
        for span in sorted(spans, key=lambda s: (min((abs(s.start - a) for a in spots),
                                                     default=0), s.start)):
            yield span.text, hit


def anchors(hit: Hit) -> list[int]:
    """Positions of the matched relation words (lower-case in the sentence: "directed",
    "born"); names are not anchors, since the finding is what the sentence says *about*
    the name. Falls back to every matched word."""
    relation, every = [], []
    for m in re.finditer(r"\w+", hit.sentence):
        if stem(m.group(0).lower()) in hit.matched:
            every.append(m.start())
            if m.group(0)[0].islower():
                relation.append(m.start())
    return relation or every


def confidence(hit: Hit | None, query: str) -> float:
    if hit is None:
        return 0.05
    share = len(hit.matched) / max(len(stems(query)), 1)
    return round(min(0.95, max(0.05, 0.2 + 0.75 * share)), 4)


def verify(subquery: str, finding: str, hit: Hit) -> str:
    """VERIFY, as a reader judges a hop: does the selected sentence (read in its passage,
    whose title is the subject of its sentences) state the finding about what the
    sub-query asks?

    * **about** — it concerns the entity the sub-query names: every content word of one
      of the sub-query's names is in the passage title or the sentence (a sub-query that
      names nothing is about anything);
    * **asked** — the share of the sub-query's relation words (its content words outside
      its names, type nouns and question words) the sentence itself states;
    * the finding is in the sentence, or is the passage's subject (its title).

    supported: about, the finding stated, half the relation words or more; partial: about
    and the finding stated with fewer (a relation said in words this reader does not
    know is not evidence against it); unsupported: the sentence is about something else,
    or does not state the finding. Nothing else in view is consulted."""
    names = [set(tx.content_words(span.text)) for span in tx.capitalized_spans(subquery)]
    names = [n for n in names if n]
    context = set(tx.words(f"{hit.ev.title} {hit.sentence}"))
    about = not names or any(n <= context for n in names)
    named = set().union(*names) if names else set()
    relation = {stem(w) for w in tx.content_words(subquery)
                if w not in named and w not in TYPE_NOUNS}
    stated = relation & stems(hit.sentence)
    said = bool(finding) and (norm(finding) in norm(hit.sentence)
                              or norm(finding) == norm(hit.ev.title))  # its subject
    if not about or not said:
        return "unsupported"
    return "supported" if relation and 2 * len(stated) >= len(relation) else "partial"


def norm(text: str) -> str:
    """The words of `text`, lower-case, one space apart (how findings are compared)."""
    return " ".join(tx.words(text))


def quote(hit: Hit) -> str:
    """The quoted sentence, prefixed with its passage title (the sentence's context)."""
    return f"{hit.ev.title}: {hit.sentence}"

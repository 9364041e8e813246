"""Shallow text analysis for the extractive reader: sentences, tokens, spans, answer types.

Rule-based and deterministic. Nothing here knows any data set's labels; it reads
questions and passages the way a careful grep would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

STOPWORDS = frozenset("""
a an the and or but if of at by for with about against between into through during
before after above below to from up down in out on off over under again further then
once here there when where why how all any both each few more most other some such
no nor not only own same so than too very s t can will just don should now is are
was were be been being have has had having do does did doing i me my we our you your
he him his she her it its they them their what which who whom whose this that these
those am would could also as one name named called
""".split())

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december")
DATE_RE = re.compile(
    rf"\b(?:\d{{1,2}} (?:{_MONTHS}),? \d{{3,4}}|(?:{_MONTHS}) \d{{1,2}},? \d{{3,4}}|"
    rf"(?:{_MONTHS}) \d{{3,4}}|1\d{{3}}|20\d{{2}})\b", re.IGNORECASE)
YEAR_RE = re.compile(r"\b(1\d{3}|20\d{2})\b")
NUMBER_RE = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
NUMBER_WORDS = """
zero one two three four five six seven eight nine ten eleven twelve thirteen
fourteen fifteen sixteen seventeen eighteen nineteen twenty
""".split()
_WORD_RE = re.compile(r"\w+", re.UNICODE)
# A capitalised word (incl. digits/apostrophes/hyphens inside), e.g. "O'Neil", "Hesse-Kassel".
_CAP = r"(?:[A-Z0-9][\w'’.\-]*)"
_CONNECT = r"(?:of|de|da|del|der|di|du|van|von|la|le|the|and|&|y|bin|al)"
SPAN_RE = re.compile(rf"{_CAP}(?:\s+(?:{_CONNECT}\s+)*{_CAP})*")
_SENT_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“(\[]?[A-Z0-9])")
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|No|Mt|Ft|Gen|Col|Lt|Sgt|Capt|Prof|Rev|"
                     r"vs|etc|Inc|Ltd|Co|Corp|U\.S|U\.K)|\b[A-Z])\.$")
YESNO_START = frozenset("""
is are was were do does did has have had can could will would should shall may might
""".split())
SENTENCE_START_NOISE = frozenset("""
The A An In On At He She It They His Her Its Their This That These Those As After
Before During By For From With When While Since Although Born Directed Written
""".split())


NEGATIONS = frozenset("""
not no never neither nor none nobody nothing nowhere cannot false untrue
""".split())
"""English negation words (and the predicates of falsity, "… is false"): a sentence
with one states what is *not* so."""


def negated(sentence: str) -> bool:
    """Does the sentence carry a negation (a negation word or an n't contraction)?"""
    lowered = sentence.lower()
    return "n't" in lowered or "n’t" in lowered or not NEGATIONS.isdisjoint(words(lowered))


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS]


def stem(word: str) -> str:
    """A crude prefix stem (first 5 letters) so direct/directed/director meet."""
    return word[:5] if len(word) > 5 else word


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


@lru_cache(maxsize=65536)
def split_sentences(text: str) -> tuple[str, ...]:
    """Sentence split on end punctuation, not after common abbreviations or initials."""
    parts: list[str] = []
    start = 0
    for match in _SENT_END.finditer(text):
        head = text[start:match.start()].rstrip()
        if _ABBREV.search(head):
            continue
        if head:
            parts.append(head)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return tuple(p.strip() for p in parts if p.strip())


@dataclass(frozen=True)
class Span:
    text: str
    start: int
    end: int


def capitalized_spans(sentence: str) -> list[Span]:
    """Runs of capitalised words (proper names, titles), trimmed of leading noise words."""
    spans: list[Span] = []
    for m in SPAN_RE.finditer(sentence):
        text, start = m.group(0), m.start()
        # Drop a sentence-initial function word ("The film ..." → not a name).
        first, _, rest = text.partition(" ")
        if first in SENTENCE_START_NOISE and (start == 0 or not rest):
            if not rest:
                continue
            start += len(first) + 1
            text = rest
        text = re.sub(r"['’]s?$", "", text.rstrip(".,"))
        text = re.sub(rf"(?:\s+{_CONNECT})+$", "", text)
        if start == 0 and " " not in text:
            continue  # a lone capitalised sentence opener ("Afterward", "Two")
        if text and not text.isdigit():
            spans.append(Span(text, start, start + len(text)))
    return spans


def date_spans(sentence: str) -> list[Span]:
    return [Span(m.group(0), m.start(), m.end()) for m in DATE_RE.finditer(sentence)]


def number_spans(sentence: str) -> list[Span]:
    found = [Span(m.group(0), m.start(), m.end()) for m in NUMBER_RE.finditer(sentence)
             if not YEAR_RE.fullmatch(m.group(0))]
    for m in re.finditer(rf"\b(?:{'|'.join(NUMBER_WORDS)})\b", sentence, re.IGNORECASE):
        found.append(Span(m.group(0), m.start(), m.end()))
    return sorted(found, key=lambda s: s.start)


# --- question analysis -------------------------------------------------------------------

@dataclass(frozen=True)
class QuestionType:
    kind: str
    """yesno | choice | date | number | person | place | entity"""
    options: tuple[str, ...] = ()
    """For choice questions: the two options named in the question."""
    direction: str = ""
    """For choice questions: earlier | later | more | less | "" (unknown)."""


_EARLIER = re.compile(r"\b(first|earlier|older|oldest|before|earliest|elder|longer ago)\b", re.I)
_LATER = re.compile(r"\b(later|younger|youngest|more recent|most recent|last|newer|after)\b",
                    re.I)
_MORE = re.compile(r"\b(more|most|larger|largest|bigger|biggest|higher|highest|longer|"
                   r"longest|taller|tallest|greater|greatest)\b", re.I)
_LESS = re.compile(r"\b(fewer|less|least|smaller|smallest|lower|lowest|shorter|shortest)\b",
                   re.I)


def choice_options(question: str) -> tuple[str, ...]:
    """The two options of "…, A or B?" / "… A or B?"; () if the question has none."""
    body = question.strip().rstrip("?").strip()
    if " or " not in body:
        return ()
    head, _, right = body.rpartition(" or ")
    left = head.rsplit(",", 1)[1] if "," in head else ""
    if not left:
        for marker in (" between ", ": "):
            if marker in head:
                left = head.rsplit(marker, 1)[1]
                break
    if not left:
        caps = capitalized_spans(head)
        left = caps[-1].text if caps and head.endswith(caps[-1].text) else ""
    left, right = left.strip(" ,"), right.strip(" ,")
    return (left, right) if left and right else ()


def question_head(question: str) -> str:
    """The question up to its first relative clause: "What is the population of the country
    that contains …" → "What is the population of the country". The answer type is read
    from the head, so "where" inside "the city where X was formed" does not count."""
    m = re.search(r"\s(?:that|where|who|whom|whose|which)\s", question[1:])
    return question[: m.start() + 1] if m else question


def question_type(question: str) -> QuestionType:
    q = question.strip()
    options = choice_options(q)
    head = question_head(q).lower()
    first = head.split(" ", 1)[0] if head else ""
    if options and first not in {"how"}:
        direction = ("earlier" if _EARLIER.search(q) else "later" if _LATER.search(q)
                     else "more" if _MORE.search(q) else "less" if _LESS.search(q) else "")
        return QuestionType("choice", options, direction)
    if first in YESNO_START:
        return QuestionType("yesno")
    if re.search(r"\bhow (many|much|long|old)\b|\bpopulation\b|\bnumber of\b", head):
        return QuestionType("number")
    if re.search(r"\b(when|year|what date|which date|date of)\b", head):
        return QuestionType("date")
    if re.search(r"^(who|whom|whose)\b|\b(which|what) (person|people|man|woman)\b", head):
        return QuestionType("person")
    if re.search(r"^where\b|\b(which|what) (city|country|state|town|county|region|continent|"
                 r"place|island|nation)\b", head):
        return QuestionType("place")
    return QuestionType("entity")

"""The consistency checker's own way of reading words — shared with no agent.

A judge that reads text the way the agent under test reads it finds that agent's errors
by construction (and misses every other agent's). So the rule-based checker
(`_checks.py`) has its own primitives, written apart from the extractive reader's
(`_text`, `_reading`, `_questions`) and tested to share no function with them
(`tests/test_checks_share_nothing.py`): the Snowball English stemmer (a published
algorithm, not the reader's suffix rules), its own tokens, sentences, names and values.

Everything here is a pure function of its text.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

import snowballstemmer

_TOKEN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+(?:['’][^\W\d_]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMERAL = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_MONTHS = ("january february march april may june july august september october "
           "november december").split()

_PREPOSITIONS = frozenset("""
along besides among across through against between behind beyond around near toward
towards via per
""".split())
"""Prepositions that open names as often as sentences ("Beyond the Sea"): a name keeps
them, but one standing alone is no name ("Along with X, ...")."""

FUNCTION_WORDS = frozenset("""
a an the and or but nor if then than that this these those there here of in on at to
for from by with without within into onto upon over under about after before during
since until as is are was were be been being am do does did done has have had having
it its it's he him his she her hers they them their theirs we us our you your i me my
who whom whose which what when where why how whether not no yes also only just very
so such too can could may might must shall should will would one ones any some each
every all both either neither other another same own more most much many few less
out up down off away back
""".split())
"""English function words. `how many` / `what year` are read by `asks_for`, not here."""

_NAME_GLUE = frozenset({"of", "the", "de", "von", "van", "la", "le", "del", "da", "and"})
_PUNCTUATION = ".,;:!?\"“”()'’"


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


def tokens(text: str) -> list[str]:
    """Lower-cased words and numerals, in order ("1,200" stays one numeral)."""
    return [t.lower() for t in _TOKEN.findall(text)]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of one lower-case word; numerals stay as they are."""
    return word if word[:1].isdigit() else str(_stemmer().stemWord(word))


def content_stems(text: str) -> set[str]:
    """Stems of the text's words that are not function words (numerals without commas)."""
    return {stem(t.replace(",", "")) for t in tokens(text) if t not in FUNCTION_WORDS}


def sentences(text: str) -> list[str]:
    """The text split after ., ! or ? where a capital, digit or quote opens the next."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def names(text: str) -> list[str]:
    """Proper names: runs of capitalised words (joined by "of", "the", "de", ...), with
    leading function words dropped ("In Paris" -> "Paris", "It" -> nothing)."""
    found: list[str] = []
    run: list[str] = []

    def close() -> None:
        if len(run) == 1 and run[0].lower() in _PREPOSITIONS:
            run.clear()  # "Along with ...": a lone preposition; "Beyond the Sea" is a name
        while run and run[0].lower() in FUNCTION_WORDS | _NAME_GLUE:
            run.pop(0)
        while run and run[-1].lower() in _NAME_GLUE:
            run.pop()
        if run:
            found.append(" ".join(run))
        run.clear()

    for piece in text.split():
        word = piece.strip(_PUNCTUATION)
        if piece[:1] in _PUNCTUATION:
            close()
        if word[:1].isupper() or (run and (word[:1].isdigit() or word.lower() in _NAME_GLUE)):
            run.append(word)
        else:
            close()
        if piece[-1:] in _PUNCTUATION:
            close()
    close()
    return found


_WH = frozenset({"what", "which", "whose", "how"})
_RELATIVE = frozenset({"where", "that", "which", "who", "whom", "whose", "when"})


def type_words(question: str) -> set[str]:
    """Stems of the words a question uses to name the *kind* of a thing, read from their
    place, not from a list: right after "what" / "which" ("which country") or right before
    a relative word ("the city where", "the team that")."""
    words = tokens(question)
    kinds = {b for a, b in itertools.pairwise(words) if a in _WH}
    kinds |= {a for a, b in itertools.pairwise(words) if b in _RELATIVE}
    return {stem(w) for w in kinds if w not in FUNCTION_WORDS}


def numerals(text: str) -> set[str]:
    """The numerals of a text, commas dropped ("1,200" -> "1200")."""
    return {m.replace(",", "") for m in _NUMERAL.findall(text)}


def years(text: str) -> set[str]:
    return set(_YEAR.findall(text))


def value_kind(value: str) -> str:
    """"date" (a year, or a month with a number), "number" (numerals only) or "entity"."""
    words = tokens(value)
    if not words:
        return "entity"
    if (any(w in _MONTHS for w in words) and numerals(value)) or _YEAR.fullmatch(value.strip()):
        return "date"
    return "number" if all(w[:1].isdigit() for w in words) else "entity"


def asks_for(question: str) -> str:
    """What kind of value the question asks for: "number", "date" or "entity"."""
    q = " ".join(tokens(question))
    if re.search(r"\bhow (many|much|old|long|far|tall|big)\b", q):
        return "number"
    if re.search(r"\b(when|what year|which year|what date|in what year)\b", q):
        return "date"
    return "entity"


def asks_whom_or_where(question: str) -> str:
    """What a question's opening asks for: "person" ("Who ...", "Whom ..."), "place"
    ("Where ...", "What is the place of ...", "In which city ...") or "" (anything else:
    "Which film ...", "What ..."). Read from the opening only: a relative "who" later on
    ("the director who died") asks nothing."""
    q = " ".join(tokens(question))
    if re.match(r"(who|whom)\b", q):
        return "person"
    if re.match(r"(where\b|(what|which) (is|was) the place of\b|in (what|which) "
                r"(city|country|town|place)\b)", q):
        return "place"
    return ""


def offers_choice(question: str) -> bool:
    """Whether the question offers alternatives ("Who is younger, A or B?")."""
    return " or " in f" {' '.join(tokens(question))} "


def used_as_modifier(value: str, text: str) -> bool:
    """Whether the text uses the value as a word that describes a noun, not as a name: "a
    Czech film director", "an Indian actor" (after "a"/"an", followed by a lower-case
    word). A nationality or a style read where a name was asked is the wrong kind of
    thing, whatever its spelling."""
    if not value.strip() or len(value.split()) > 3:
        return False
    pattern = rf"\b(?:a|an)\s+{re.escape(value.strip())}\s+[a-z]"
    return re.search(pattern, text) is not None


def covers(part: str, whole: str) -> bool:
    """Whether every content stem of `part` is among `whole`'s (and `part` has one)."""
    stems = content_stems(part)
    return bool(stems) and stems <= content_stems(whole)

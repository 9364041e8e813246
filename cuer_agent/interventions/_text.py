"""Text helpers the interventions share: words, sentences, capitalised spans, numbers,
whole-word matching and stopwords — one definition each, imported by the fault modules.

Kept SEPARATE, on purpose, from `cuer_agent.llm._text` (the extractive reader's text
utilities): faults must not be tuned to the reader they test, so they do not share its
text code — its tokens, spans, sentence splitter or stopwords. A change to how the reader
sees text must never change which span a fault picks, and the reverse.

Two families, because the faults that use them define their words differently (merging
them would change which spans the faults find):

* **Topics** (`structural_faults`: query drift): `WORD` matches (``\\w+`` with inner
  apostrophes), content words as the retriever sees them (`cuer_agent.retrieval.tokenize`:
  lowercase ``\\w+`` minus the retriever's `STOPWORDS`), capitalised spans joined by
  `CONNECTORS`, and a sub-query's `topic`.
* **Certified spans** (`tampering`): `tokens` (``\\w+`` with inner apostrophes or
  hyphens, a possessive ``'s`` trimmed), `SPAN_STOPWORDS` and `SPAN_CONNECTORS`,
  capitalised spans (`cap_spans`), common word sequences (`common_spans`), and
  whole-word, case-insensitive matching (`span_pattern`, `occurs`; `SPAN_NUMBER` never
  matches inside a larger number such as "1,500", "3.5" or "COVID-19").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cuer_agent.metrics.answer import normalize_answer
from cuer_agent.retrieval import STOPWORDS, tokenize

__all__ = [
    "ARTICLES",
    "CONNECTORS",
    "SPAN_CONNECTORS",
    "SPAN_NUMBER",
    "SPAN_STOPWORDS",
    "WORD",
    "Span",
    "Token",
    "cap_spans",
    "capitalized_spans",
    "common_spans",
    "content_run",
    "content_tokens",
    "content_words",
    "has_words",
    "is_name_word",
    "joined",
    "occurs",
    "span_pattern",
    "starts_upper",
    "tokens",
    "topic",
    "trim",
]


def joined(text: str, end: int, start: int) -> bool:
    """Are two words, one ending at `end` and the next starting at `start`, separated by
    white space only (one phrase)?"""
    return not text[end:start].strip()


def starts_upper(word: str) -> bool:
    return word[:1].isupper()


# --- topics (query drift) ------------------------------------------------------------------

WORD = re.compile(r"\w+(?:['’]\w+)*")
CONNECTORS = frozenset("of the and de du la le von van der da del y on upon a an over to from "
                       "in at for with into under".split())
"""Lowercase words that join capitalised words into one span ("A History of Stakarnor")."""
ARTICLES = frozenset({"the", "a", "an"})


def content_words(text: str) -> set[str]:
    """The content words of `text`: `tokenize` (lowercase ``\\w+``, stopwords removed)."""
    return set(tokenize(text))


def has_words(text: str) -> bool:
    return WORD.search(text) is not None


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    tokens: int


def capitalized_spans(text: str) -> list[Span]:
    return list(_spans_of(text))


def _adjacent(text: str, a: re.Match[str], b: re.Match[str]) -> bool:
    return joined(text, a.end(), b.start())


@functools.lru_cache(maxsize=65536)  # every fault × hop of an example scans the same text
def _spans_of(text: str) -> tuple[Span, ...]:
    """Capitalized word sequences ("Quorin Rising", "A History of Stakarnor").

    Lowercase connectors (of, the, and …) join capitalized words; numbers may follow a
    capitalized word ("Apollo 13"); a possessive ``'s`` is trimmed. A capitalized first
    word of the text starts a span only if it is not a stopword ("Who", "In", "Was"),
    except an article directly followed by a capitalized word ("The Silent Bymrorrick").
    """
    words = list(WORD.finditer(text))
    spans: list[Span] = []
    i = 0
    while i < len(words):
        w = words[i].group()
        lw = w.lower()
        initial = words[i].start() == len(text) - len(text.lstrip())
        if not starts_upper(w) or (initial and lw in STOPWORDS and not (
                lw in ARTICLES and i + 1 < len(words) and starts_upper(words[i + 1].group())
                and _adjacent(text, words[i], words[i + 1]))):
            i += 1
            continue
        j = i  # last word in the span
        while True:
            k = j + 1
            while (k < len(words) and words[k].group() in CONNECTORS
                   and _adjacent(text, words[k - 1], words[k])):
                k += 1
            if (k < len(words) and _adjacent(text, words[k - 1], words[k])
                    and (starts_upper(words[k].group())
                         or (k == j + 1 and words[k].group().isdigit()))):
                j = k
                continue
            break
        start, end = words[i].start(), words[j].end()
        if text[end - 2:end] in ("'s", "’s") and end - 2 > start:
            end -= 2
        spans.append(Span(start, end, text[start:end], j - i + 1))
        i = j + 1
    return tuple(spans)


def content_run(text: str) -> Span | None:
    """The longest run of consecutive content words (for sub-queries without capitals)."""
    best: Span | None = None
    run: list[re.Match[str]] = []
    for m in [*WORD.finditer(text), None]:
        if m is not None and content_words(m.group()) and (not run or _adjacent(text, run[-1], m)):
            run.append(m)
            continue
        if run and (best is None or len(run) > best.tokens):
            best = Span(run[0].start(), run[-1].end(), text[run[0].start():run[-1].end()],
                        len(run))
        run = [m] if m is not None and content_words(m.group()) else []
    return best


def topic(subquery: str) -> tuple[Span | None, str]:
    """The entity/topic of a sub-query and how it was found.

    The longest capitalized span (a span that is only the first word of the text loses to
    any other); without one, the longest run of content words.
    """
    spans = capitalized_spans(subquery)
    if spans:
        first = len(subquery) - len(subquery.lstrip())
        best = max(spans, key=lambda s: (not (s.start == first and s.tokens == 1), s.tokens,
                                         -s.start))
        return best, "entity"
    run = content_run(subquery)
    return (run, "content_run") if run else (None, "none")


# --- certified spans (content tampering) ---------------------------------------------------

SPAN_STOPWORDS = frozenset("""
a an the of in on at to for by with from into onto over under about as and or but nor so
yet if then than that this these those there here is was were are be been being am do does
did has have had not no yes it its he she they them his her hers their theirs we us our i
me my you your who whom whose what which when where why how also however while although
though since after before during until upon via per s
""".split())
"""Words that never make a span capitalised / content-bearing on their own."""

SPAN_CONNECTORS = frozenset({"of", "the", "de", "del", "della", "da", "di", "du", "van", "von",
                             "der", "den", "la", "le", "y", "al", "bin", "ibn"})
"""Lowercase words allowed inside a capitalised span ("University of Oxford")."""

_NUM_BODY = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_LEFT = r"(?<!\w)(?<!\d[.,])"
_RIGHT = r"(?!\w)(?![.,]\d)"
_NUM_LEFT = r"(?<![^\W\d_]-)"  # not the "19" of "COVID-19"
SPAN_NUMBER = re.compile(_LEFT + _NUM_LEFT + _NUM_BODY + _RIGHT)
_TOKEN = re.compile(r"\w+(?:['’-]\w+)*")


def span_pattern(span: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive, whitespace-tolerant pattern for `span`."""
    parts = span.split()
    body = r"\s+".join(re.escape(p) for p in parts)
    left = _LEFT + (_NUM_LEFT if span[:1].isdigit() else "")
    return re.compile(left + body + _RIGHT, re.IGNORECASE)


def occurs(span: str, texts: Iterable[str]) -> bool:
    """Does `span` occur (whole words, case-insensitive) in any of `texts`?"""
    if not span.split():
        return False
    pattern = span_pattern(span)
    return any(pattern.search(text) for text in texts)


Token = tuple[str, int, int]
"""(word, start, end) in the text."""


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        word, start, end = m.group(), m.start(), m.end()
        if len(word) > 2 and word[-2:].lower() in ("'s", "’s"):
            word, end = word[:-2], end - 2
        out.append((word, start, end))
    return out


def is_name_word(word: str) -> bool:
    """Capitalised and not a `SPAN_STOPWORDS` word ("Born" is, "The" is not)."""
    return starts_upper(word) and word.lower() not in SPAN_STOPWORDS


def content_tokens(text: str) -> set[str]:
    """Normalised tokens (`normalize_answer`) minus `SPAN_STOPWORDS` (all of them when
    nothing else is left)."""
    words = normalize_answer(text).split()
    return {t for t in words if t not in SPAN_STOPWORDS} or set(words)


def _tokens_joined(text: str, left: Token, right: Token) -> bool:
    return joined(text, left[2], right[1])


def trim(run: list[Token], keep: Callable[[str], bool]) -> list[Token]:
    """`run` without the edge tokens `keep` rejects."""
    start, end = 0, len(run)
    while start < end and not keep(run[start][0]):
        start += 1
    while end > start and not keep(run[end - 1][0]):
        end -= 1
    return run[start:end]


def cap_spans(text: str, min_caps: int) -> list[tuple[int, int]]:
    """Char offsets of capitalised spans with >= `min_caps` capitalised words."""
    spans: list[tuple[int, int]] = []
    run: list[Token] = []

    def flush() -> None:
        trimmed = trim(run, is_name_word)
        if trimmed and sum(is_name_word(t[0]) for t in trimmed) >= min_caps:
            spans.append((trimmed[0][1], trimmed[-1][2]))

    for tok in tokens(text):
        joinable = tok[0][:1].isupper() or tok[0] in SPAN_CONNECTORS
        if run and (not joinable or not _tokens_joined(text, run[-1], tok)):
            flush()
            run = []
        if joinable:
            run.append(tok)
    flush()
    return spans


def common_spans(text: str, subquery: str) -> list[tuple[int, int]]:
    """Maximal common word sequences of `text` and `subquery`, as offsets in `text`,
    split at punctuation, edge stopwords trimmed, >= 1 capitalised word."""
    toks = tokens(text)
    a = [t[0].lower() for t in toks]
    b = [t[0].lower() for t in tokens(subquery)]
    spans: list[tuple[int, int]] = []
    prev = [0] * (len(b) + 1)
    for i, word in enumerate(a):
        cur = [0] * (len(b) + 1)
        for j, other in enumerate(b):
            if word != other:
                continue
            cur[j + 1] = prev[j] + 1
            extends = i + 1 < len(a) and j + 1 < len(b) and a[i + 1] == b[j + 1]
            if extends:
                continue
            run = toks[i - cur[j + 1] + 1:i + 1]
            cuts = [0] + [k for k in range(1, len(run))
                          if not _tokens_joined(text, run[k - 1], run[k])]
            for lo, hi in zip(cuts, [*cuts[1:], len(run)], strict=True):
                piece = trim(run[lo:hi], lambda w: w.lower() not in SPAN_STOPWORDS)
                if any(is_name_word(t[0]) for t in piece):
                    spans.append((piece[0][1], piece[-1][2]))
        prev = cur
    return spans

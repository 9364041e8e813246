"""How the extractive planner reads a question's relations: which of its relation
phrases the hops so far have resolved (see `cuer_agent.llm.extractive`)."""

from __future__ import annotations

import re

from cuer_agent.llm import _text as tx
from cuer_agent.llm._reading import TYPE_NOUNS, stem, stems
from cuer_agent.llm.skills import HopView

_KINDS = frozenset(stem(w) for w in TYPE_NOUNS | {"many", "much"})
"""Stems that name a kind of answer, not a relation."""


def residual(question: str, history: tuple[HopView, ...]) -> set[str]:
    """Question stems no hop has resolved. Type nouns ("the country that…", "which
    city") and "how many/much" name kinds of answer, not relations.

    The question's relation words form *phrases*: runs of them with no other content
    word between ("people live", "alma mater"), each naming one relation. A hop
    resolves every phrase its chosen sentence (or finding) matched a word of. A hop that
    matched no phrase still resolved *some* relation, one this reader has no word for:
    it uses up the open phrase nearest the part of the question already resolved (the
    named entity and the phrases resolved so far; ties go to the phrase before), since
    in a nested English question ("the population of the country that contains the city
    where X was born") each relation attaches to the phrase next to it.
    """
    wanted = stems(question) - _KINDS
    for hop in history:
        wanted -= stems(hop.reason) | stems(hop.finding)
    for phrase in _closed_phrases(question, history):
        wanted -= phrase[0]
    return wanted


def open_phrases(question: str, history: tuple[HopView, ...]) -> list[Phrase]:
    """The question's relation phrases no hop resolved (as `residual` resolves them): a
    part of the question the hops never read, whatever other words stayed unmatched."""
    closed = _closed_phrases(question, history)
    return [p for p in _relation_phrases(question) if p not in closed]


def _closed_phrases(question: str, history: tuple[HopView, ...]) -> list[Phrase]:
    open_now = _relation_phrases(question)
    resolved = _name_positions(question)
    closed: list[Phrase] = []
    for hop in history:
        seen = stems(hop.reason) | stems(hop.finding)
        done = [p for p in open_now if p[0] & seen]
        if not done and open_now and resolved:
            done = [min(open_now, key=lambda p: _distance(p[1], resolved))]
        for phrase in done:
            open_now.remove(phrase)
            closed.append(phrase)
            resolved |= set(phrase[1])
    return closed


Phrase = tuple[frozenset[str], tuple[int, ...]]
"""A relation phrase: its stems and its content-word positions in the question."""


def _relation_phrases(question: str) -> list[Phrase]:
    """Runs of adjacent lower-case relation words (content words that are not type
    nouns): any other word between two of them, a stopword included, ends a run."""
    phrases: list[Phrase] = []
    run: list[tuple[str, int]] = []
    position = -1
    for word in [*re.findall(r"\w+", question), ""]:
        lower = word.lower()
        content = bool(word) and lower not in tx.STOPWORDS
        position += content
        if content and word == lower and stem(lower) not in _KINDS:
            run.append((stem(lower), position))
            continue
        if run:
            phrases.append((frozenset(s for s, _ in run), tuple(i for _, i in run)))
            run = []
    return phrases


def _name_positions(question: str) -> set[int]:
    """Content-word positions of the question's capitalised words after its first word."""
    content = [w for w in re.findall(r"\w+", question) if w.lower() not in tx.STOPWORDS]
    return {i for i, word in enumerate(content) if i > 0 and word != word.lower()}


def _distance(spots: tuple[int, ...], resolved: set[int]) -> tuple[int, int]:
    """Word distance to the resolved part; a phrase before it wins a tie."""
    return min((abs(p - r), 0 if p < r else 1) for p in spots for r in resolved)


def words_with_stems(question: str, wanted: set[str]) -> str:
    """The question's own words (in order, once each) whose stems are in `wanted`."""
    kept = [w for w in tx.content_words(question) if stem(w) in wanted]
    return " ".join(dict.fromkeys(kept))

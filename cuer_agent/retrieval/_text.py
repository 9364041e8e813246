"""Text as every engine sees it: the tokenizer (`tokenize`, `STOPWORDS`), sentence
splitting (`sentences`), and greedy sentence packing of passages into `Chunk`s with
stable ids (`chunk_passages`). The rules: `cuer_agent.retrieval`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from cuer_agent.data._example import Passage
from cuer_agent.errors import ConfigError
from cuer_agent.trace import Evidence, evidence_id

# A fixed list (not NLTK's or sklearn's at runtime) so tokenization never changes under us.
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for
from further had has have having he her here hers herself him himself his how i if in
into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up
very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t d ll m re ve
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"\w+")
# A sentence ends at . ! or ? (optionally closed by quotes/brackets) followed by whitespace,
# so "3.5" and "U.S.A" stay inside one sentence; the last sentence runs to the end.
_SENTENCE = re.compile(r"\S.*?(?:[.!?][\"'”’)\]]*(?=\s)|$)", re.S)

DEFAULT_MAX_WORDS = 2000
"""Large enough that every paragraph of the shipped datasets stays one chunk ``c0``
(the longest HotpotQA dev paragraph has 1,309 words); chunking is for user corpora."""


def tokenize(text: str) -> list[str]:
    """Lowercase unicode ``\\w+`` tokens without stopwords. Deterministic, no stemming."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: part of one passage, with a stable id."""

    id: str
    title: str
    text: str
    paragraph: int
    """`Passage.index` of the source passage."""
    chunk: int
    """0-based chunk number inside the passage."""

    def to_evidence(self, rank: int = 0, score: float = 0.0) -> Evidence:
        return Evidence(id=self.id, title=self.title, text=self.text, rank=rank, score=score)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (see `_SENTENCE`); the interventions split text with it too."""
    return [s for m in _SENTENCE.finditer(text) if (s := m.group().strip())]


def chunk_passages(passages: Iterable[Passage], max_words: int = DEFAULT_MAX_WORDS) -> list[Chunk]:
    """Greedy sentence packing: chunks of at most ``max_words`` words, in passage order.

    A passage that fits is one chunk ``c0`` with its text verbatim. Otherwise sentences are
    packed in order; a sentence longer than ``max_words`` becomes a chunk of its own.
    """
    if max_words < 1:
        raise ConfigError(f"max_words must be >= 1, got {max_words}")
    chunks: list[Chunk] = []
    for p in passages:
        if len(p.text.split()) <= max_words:  # fast path: all of HotpotQA, the 1M corpus
            chunks.append(Chunk(evidence_id(p.title, p.index, 0), p.title, p.text, p.index, 0))
            continue
        packs: list[list[str]] = []
        size = 0
        for sentence in sentences(p.text):
            n = len(sentence.split())
            if not packs or size + n > max_words:
                packs.append([sentence])
                size = n
            else:
                packs[-1].append(sentence)
                size += n
        for no, pack in enumerate(packs):
            chunks.append(Chunk(evidence_id(p.title, p.index, no), p.title, " ".join(pack),
                                p.index, no))
    return chunks

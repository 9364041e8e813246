"""Long evidence, cut to the window a model is shown.

A backend with a small context declares `evidence_words` (llama.cpp: `EVIDENCE_WORDS`): the
most words of one evidence item a skill request shows. An item over it is shown as its
*window*: `evidence_words` consecutive words starting at a sentence start, the start whose
window holds the most distinct query terms (the retriever's own terms, `tokenize`), the
earliest on a tie. The agent records each window it showed in the hop's `windows` (the
item's id → its first word and the word after its last, counted in `text.split()`), so a
trace says what the model saw, and the item's full text stays in the trace for every
measure that reads it.

No window is cut for a backend that declares no budget (the offline reader, hosted
models): their traces are what they were.
"""

from __future__ import annotations

from cuer_agent.retrieval import sentences, tokenize

EVIDENCE_WORDS = 200
"""The window of a small local model (llama.cpp, 8,192-token context). Derived so that a
20-item single-shot view fits with room to answer: 20 × 200 words × ~1.4 tokens per word
≈ 5,600 tokens, leaving ~2,500 for the instructions, the history, the reply schema and the
reply's own bound. 1–3 % of MuSiQue paragraphs are longer (the longest of the shipped
sample has 294 words; HotpotQA's 1,309)."""

Span = tuple[int, int]
"""A window: its first word and the word after its last, in `text.split()`."""


def window(text: str, query: str, words: int) -> Span | None:
    """The window of `text` shown for `query` when `text` has more than `words` words; None
    when it fits whole."""
    tokens = text.split()
    if len(tokens) <= words:
        return None
    wanted = set(tokenize(query))
    best: tuple[int, int] = (-1, 0)  # (query terms held, -start): the most, then earliest
    for start in _sentence_starts(text, len(tokens)):
        held = len(wanted & set(tokenize(" ".join(tokens[start:start + words]))))
        best = max(best, (held, -start))
    start = -best[1]
    return start, min(start + words, len(tokens))


def shown(text: str, span: Span | None) -> str:
    """`text` as the window `span` shows it (whole for None)."""
    if span is None:
        return text
    return " ".join(text.split()[span[0]:span[1]])


def _sentence_starts(text: str, n_words: int) -> list[int]:
    """The word index at which each sentence of `text` starts (0 always among them)."""
    starts, at = [0], 0
    for sentence in sentences(text):
        at += len(sentence.split())
        if at < n_words:
            starts.append(at)
    return starts

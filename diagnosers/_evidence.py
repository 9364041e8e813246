"""Small observable-trace helpers shared by several diagnosers."""

from __future__ import annotations

from cuer_agent.retrieval import tokenize
from cuer_agent.trace import HopRecord


def selected_texts(hop: HopRecord) -> list[str]:
    """Texts of the hop's selected evidence (all retrieved if nothing was selected)."""
    chosen = [ev.text for ev in hop.retrieved if ev.id in set(hop.selected)]
    return chosen or [ev.text for ev in hop.retrieved]


def coverage(text: str, evidence: list[str]) -> float:
    """Share of the text's content words present in the evidence (1.0 for no words)."""
    words = set(tokenize(text))
    if not words:
        return 1.0
    seen = {w for doc in evidence for w in tokenize(doc)}
    return len(words & seen) / len(words)

"""The one `Example` model every loader produces, and the `Dataset` that holds them.

An `Example` carries the *hidden labels* of a question (gold answer, aliases, gold
supporting titles, per-hop gold). It is never handed to the agent, the reader or a
diagnoser: they see the question and evidence only (see `cuer_agent.trace`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field


class Passage(BaseModel):
    """One source paragraph, as the dataset ships it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    """Title of the source article (HotpotQA/2Wiki/MuSiQue `title`; entity name in the
    synthetic world)."""
    text: str
    """Paragraph text; for sentence-split datasets the sentences joined as shipped."""
    index: int = 0
    """Paragraph index inside the source record (`idx` for MuSiQue, list position for
    HotpotQA/2Wiki, entity number for the synthetic world). Part of the stable evidence id."""


class HopGold(BaseModel):
    """Gold for one hop, where the dataset provides it (hidden label)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str | None = None
    """The single-hop sub-question (MuSiQue decomposition with `#k` resolved, or the
    synthetic world's sub-question); None where the dataset has none."""
    support_title: str | None = None
    """Title of the passage that supports this hop."""
    support_index: int | None = None
    """Paragraph index (`Passage.index`) of the passage that supports this hop, where the
    data set names one paragraph (MuSiQue `paragraph_support_idx`); None elsewhere."""
    answer: str | None = None
    """Intermediate answer: the bridge entity carried into the next hop, or the final answer."""
    relation: str | None = None
    """Relation name of the hop where the dataset names it (2Wiki evidences, synthetic world)."""


class Example(BaseModel):
    """A multi-hop question with its evidence pool and hidden gold labels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Dataset record id (`_id` / `id`), or `syn-<seed>-<n>` for the synthetic world."""
    dataset: str
    """Loader name: hotpotqa, 2wiki, musique or synthetic."""
    question: str
    answer: str
    """Gold answer (hidden label)."""
    aliases: tuple[str, ...] = ()
    """Other accepted gold answers (MuSiQue `answer_aliases`)."""
    passages: tuple[Passage, ...] = ()
    """The example's own evidence pool (distractor setting). Empty when the dataset
    retrieves from a shared corpus (the synthetic world)."""
    supporting_titles: tuple[str, ...] = ()
    """Titles of the gold supporting passages (hidden label), in first-mention order."""
    hops: tuple[HopGold, ...] = ()
    """Per-hop gold in hop order, where the dataset has it (hidden label)."""
    qtype: str = ""
    """Question type as the dataset names it (bridge, comparison, compositional, 2hop…)."""
    meta: dict[str, str] = Field(default_factory=dict)
    """Small dataset-specific extras (e.g. HotpotQA `level`), strings only."""

    @property
    def n_hops(self) -> int:
        """Hop count: per-hop gold where present, else the number of supporting titles."""
        return len(self.hops) if self.hops else len(self.supporting_titles)

    @property
    def gold_answers(self) -> tuple[str, ...]:
        return (self.answer, *self.aliases)


@dataclass(frozen=True)
class Dataset:
    """Examples plus, for open-corpus data, the shared corpus they retrieve from."""

    name: str
    examples: list[Example]
    corpus: list[Passage] | None = None
    """Shared passages (synthetic world); None when each example brings its own pool."""
    source: str = ""
    """Where it came from: a file path or a synthetic-world spec string."""
    info: dict[str, object] = field(default_factory=dict)

    def hop_histogram(self) -> dict[int, int]:
        counts = Counter(ex.n_hops for ex in self.examples)
        return dict(sorted(counts.items()))

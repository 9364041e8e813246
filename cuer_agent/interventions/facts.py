"""What the experimenter knows about hop h's fact, and how the world would state it otherwise.

A fault is certified against the fact hop h needs (a hidden label): which passages of the
corpus state it, in how many (its redundancy), and — for the faults that put a
contradicting passage into the world — the passage the world's own process writes when
the fact has another value. A `FactSource` answers these questions for one data set:

* `SyntheticFacts` — the synthetic world knows every fact exactly: the paragraphs that
  state it (`World.fact_passages`), a counterfactual value (a family sibling's value for
  *conflicting* evidence; a shifted number or another entity of the type for *stale*
  evidence) and the paragraph the world's generator writes with it
  (`World.counterfactual_paragraph`): same title, opening, sentence forms, fillers and
  length distribution as the real ones, an id of the form the next paragraph of that
  article would get. Tampering swaps a name for another name of the same type.
* `PoolFacts` — real data sets (HotpotQA, 2Wiki, MuSiQue): hop h's support title names
  the fact's passages in the example's pool; there is no generator, so a contradicting
  passage is a minimal certified edit of the real one (`misleading_faults`), never a
  template sentence.

Nothing here is shown to the agent, the reader or a diagnoser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

import numpy as np

from cuer_agent.data import Example, Passage
from cuer_agent.trace import evidence_id

if TYPE_CHECKING:
    from cuer_agent.data._synthetic_world import Redundancy, World

Kind = Literal["conflicting", "stale"]


@dataclass(frozen=True)
class Fact:
    """Hop h's gold fact (hidden label)."""

    hop: int
    title: str
    """The title of the passage(s) stating it (the fact's subject)."""
    passage_ids: tuple[str, ...]
    """Every indexed chunk that states it."""
    relation: str | None = None
    value: str | None = None
    """The fact's value as the passages state it (the hop's answer), when known."""

    @property
    def redundancy(self) -> int:
        """In how many passages the fact is stated."""
        return len(self.passage_ids)


@dataclass(frozen=True)
class Counterfactual:
    """A passage the world writes when the fact has another value."""

    title: str
    text: str
    paragraph: int
    """The paragraph number a new paragraph of the title gets."""
    value: str
    original: str

    @property
    def id(self) -> str:
        return evidence_id(self.title, self.paragraph, 0)


class FactSource(Protocol):
    def fact(self, example: Example, hop: int) -> Fact | None:
        """Hop `hop`'s fact (1-based), or None when the data set does not say."""
        ...

    def counterfactual(self, fact: Fact, kind: Kind, rng: np.random.Generator,
                       *seed_parts: object) -> Counterfactual | None:
        """The passage the world writes with another value of the fact (None: no generator)."""
        ...

    def alternatives(self, span: str) -> Sequence[str]:
        """What the world could say in a name's place (empty: unknown)."""
        ...


class _WorldArguments(TypedDict):
    """What a `SyntheticFacts` pickles as."""

    seed: int
    size: int
    redundancy: Redundancy


class SyntheticFacts:
    """The synthetic world's facts (`cuer_agent.data.synthetic.world_of`). Pickles as the
    world's arguments: a worker process builds (or reuses) the world itself."""

    def __init__(self, seed: int, size: int, redundancy: Redundancy) -> None:
        self.seed, self.size, self.redundancy = seed, size, redundancy

    @property
    def world(self) -> World:
        from cuer_agent.data.synthetic import world_of

        return world_of(self.seed, self.size, self.redundancy)

    def fact(self, example: Example, hop: int) -> Fact | None:
        if not 1 <= hop <= len(example.hops):
            return None
        gold = example.hops[hop - 1]
        if gold.support_title is None or gold.relation is None:
            return None
        world = self.world
        entity = world.id_of(gold.support_title)
        ids = tuple(evidence_id(p.title, p.index, 0)
                    for p in world.fact_passages(entity, gold.relation))
        return Fact(hop, gold.support_title, ids, gold.relation, gold.answer)

    def counterfactual(self, fact: Fact, kind: Kind, rng: np.random.Generator,
                       *seed_parts: object) -> Counterfactual | None:
        if fact.relation is None or fact.value is None:
            return None
        world = self.world
        entity = world.id_of(fact.title)
        value = world.counterfactual_value(entity, fact.relation, kind, rng)
        passage = world.counterfactual_paragraph(entity, fact.relation, value, kind,
                                                 *seed_parts)
        return Counterfactual(passage.title, passage.text, passage.index, value, fact.value)

    def alternatives(self, span: str) -> Sequence[str]:
        return self.world.alternatives(span)

    def __getstate__(self) -> _WorldArguments:
        return {"seed": self.seed, "size": self.size, "redundancy": self.redundancy}

    def __setstate__(self, state: _WorldArguments) -> None:
        self.__init__(**state)  # type: ignore[misc]


class PoolFacts:
    """Real data sets: hop h's support title names the fact's passages in the example's
    pool (or, for an open corpus, in `corpus`)."""

    def __init__(self, corpus: Sequence[Passage] | None = None) -> None:
        self.corpus = corpus

    def fact(self, example: Example, hop: int) -> Fact | None:
        if example.hops:
            if not 1 <= hop <= len(example.hops):
                return None
            gold = example.hops[hop - 1]
            title, relation, value = gold.support_title, gold.relation, gold.answer
        elif 1 <= hop <= len(example.supporting_titles):
            title, relation, value = example.supporting_titles[hop - 1], None, None
        else:
            return None
        if title is None:
            return None
        from cuer_agent.retrieval import chunk_passages

        pool = example.passages or self.corpus or ()
        ids = tuple(c.id for c in chunk_passages(p for p in pool if p.title == title))
        return Fact(hop, title, ids, relation, value)

    def counterfactual(self, fact: Fact, kind: Kind, rng: np.random.Generator,
                       *seed_parts: object) -> Counterfactual | None:
        return None

    def alternatives(self, span: str) -> Sequence[str]:
        return ()


def fact_source(dataset: Any) -> FactSource:
    """The fact source of a loaded data set (`cuer_agent.data.Dataset`): a data set
    generated from a synthetic world names that world in its info (seed, size,
    redundancy), and its facts are re-stated the way that world writes them."""
    if {"seed", "size", "redundancy"} <= dataset.info.keys():
        info = dataset.info
        return SyntheticFacts(int(info["seed"]), int(info["size"]), info["redundancy"])
    return PoolFacts(dataset.corpus)

"""What a synthetic world is: its schema (entity types and their shares, relations,
literals, the question mix), its seeding, and the built `World` with its lookups and
the counterfactual values and paragraphs its generator would write.

See `cuer_agent.data.synthetic` for the design; `_synthetic_build` builds a world,
`_synthetic_questions` composes questions over it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Passage
from cuer_agent.data._synthetic_former import FORMER_FACTS, add_former
from cuer_agent.data._synthetic_literals import (
    YEAR_RANGES,
    YEARS_AFTER,
    city_populations,
    country_populations,
    years_after,
)
from cuer_agent.errors import ConfigError

TYPE_SHARES: dict[str, float] = {
    "person": 0.22, "film": 0.13, "book": 0.13, "company": 0.10, "university": 0.06,
    "band": 0.07, "album": 0.10, "city": 0.16, "country": 0.03,
}
"""Share of the world per entity type (cities outnumber countries ~5:1)."""
TYPES: tuple[str, ...] = tuple(TYPE_SHARES)

ENTITY_RELATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "person": (("born_in", "city"), ("educated_at", "university")),
    "film": (("directed_by", "person"), ("produced_by", "company")),
    "book": (("written_by", "person"), ("published_by", "company")),
    "company": (("founded_by", "person"), ("headquartered_in", "city")),
    "university": (("located_in", "city"),),
    "band": (("formed_in", "city"),),
    "album": (("recorded_by", "band"),),
    "city": (("located_in", "country"),),
    "country": (("capital", "city"),),
}
"""(relation, object type) per subject type. Every entity has every relation of its type."""
LITERALS: dict[str, str] = {
    "person": "birth_year", "film": "release_year", "book": "publication_year",
    "company": "founding_year", "university": "founding_year", "band": "formation_year",
    "album": "release_year", "city": "population", "country": "population",
}
"""The literal attribute (relation name = node attribute) of each type."""

MIN_SIZE = 100
MAX_HOPS = 4
FOUR_FAMILY_SHARE = 0.25
"""Share of families with four members (the others have three)."""
FORBIDDEN_STEPS = frozenset({("capital", "located_in")})
"""Relation pairs that always lead back to the previous entity."""
MAX_MISSES = 1000
"""Consecutive failed draws after which the world is taken to be out of new questions."""
MIX: tuple[tuple[str, int, int], ...] = (
    ("chain", 1, 2), ("chain", 2, 4), ("chain", 3, 5), ("chain", 4, 3),
    ("comparison", 2, 3), ("yesno", 2, 3),
)
"""The hops=None question mix: (qtype, hops, count per block of 20)."""
MAX_FACTS = 3
"""Facts per entity at most: its type's relations and its literal."""
MAX_REDUNDANCY = 3
Redundancy = int | tuple[float, ...]
"""How many passages state each fact: a fixed number (1-3), or weights of 1, 2, 3."""
REDUNDANCY_MIX: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3)
"""The default: each fact is stated in 1, 2 or 3 passages, equally often."""


def check_redundancy(value: object) -> Redundancy:
    """A valid redundancy (`Redundancy`), or `ConfigError` naming what is wrong."""
    if isinstance(value, bool):
        raise ConfigError(f"redundancy must be 1-{MAX_REDUNDANCY} or weights, got {value!r}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_REDUNDANCY:
            raise ConfigError(f"redundancy must be between 1 and {MAX_REDUNDANCY}, got {value}")
        return value
    if isinstance(value, (list, tuple)) and 0 < len(value) <= MAX_REDUNDANCY:
        weights = tuple(float(w) for w in value)
        if all(w >= 0 for w in weights) and sum(weights) > 0:
            return weights
    raise ConfigError(f"redundancy must be 1-{MAX_REDUNDANCY} or up to {MAX_REDUNDANCY} "
                      f"non-negative weights of 1, 2, 3 passages, got {value!r}")


# --- seeding -----------------------------------------------------------------------------

def seed_int(*parts: object) -> int:
    """A 64-bit seed from a stable hash of the parts (never Python's `hash()`)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def seeded_rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(seed_int(*parts))


# --- the world -----------------------------------------------------------------------------

@dataclass(eq=False, repr=False)
class World:
    """A built synthetic world: the graph, one passage per entity, and lookups."""

    seed: int
    size: int
    graph: nx.MultiDiGraph[int]
    passages: list[Passage]
    """Every paragraph of every article: entity `e`'s are `passages[start[e]:start[e + 1]]`
    (`title` = its name, `index` = paragraph number)."""
    start: np.ndarray
    fact_mask: np.ndarray
    """`fact_mask[e, slot]`: bit p is set when paragraph p of e's article states the fact
    in `slot` (`fact_slot`)."""
    redundancy: Redundancy
    details: list[str]
    """Each entity's intro detail ("film director", "drama")."""
    former: dict[tuple[int, str], str]
    """(entity, relation) → the former value its article states as former
    (`_synthetic_former`): the clean world's own disagreement."""
    names: list[str]
    types: list[str]
    by_type: dict[str, np.ndarray]
    """Entity numbers of each type."""
    families: list[tuple[int, ...]]
    family_of: np.ndarray
    _by_name: dict[str, int]

    def __repr__(self) -> str:
        return (f"World(seed={self.seed}, size={self.size}, "
                f"edges={self.graph.number_of_edges()}, passages={len(self.passages)})")

    def article(self, entity: int) -> list[Passage]:
        """The paragraphs of an entity's article, in order."""
        return self.passages[int(self.start[entity]):int(self.start[entity + 1])]

    def fact_slot(self, entity: int, relation: str) -> int:
        """Where a fact of the entity is kept: its type's relations in order, then its
        literal (KeyError for a relation the type lacks)."""
        t = self.types[entity]
        rels = [rel for rel, _ in ENTITY_RELATIONS[t]] + [LITERALS[t]]
        if relation not in rels:
            raise KeyError(f"{self.names[entity]!r} has no relation {relation!r}")
        return rels.index(relation)

    def fact_passages(self, entity: int, relation: str) -> list[Passage]:
        """The paragraphs that state the fact (as many as its redundancy)."""
        mask = int(self.fact_mask[entity, self.fact_slot(entity, relation)])
        return [p for p in self.article(entity) if mask >> p.index & 1]

    def redundancy_of(self, entity: int, relation: str) -> int:
        """In how many passages the fact is stated."""
        return len(self.fact_passages(entity, relation))

    def alternatives(self, name: str, limit: int = 64) -> list[str]:
        """Other names of the same type (empty for a string that names no entity): what the
        world could have said in a name's place — the family siblings, then up to `limit`
        others, the next ones in entity order."""
        entity = self._by_name.get(name)
        if entity is None:
            return []
        siblings = self.siblings(entity)
        same = sorted(int(e) for e in self.by_type[self.types[entity]].tolist())
        at = same.index(entity)
        rest = [e for e in same[at + 1:] + same[:at] if e not in siblings][:limit]
        return [self.names[e] for e in (*siblings, *rest)]

    def counterfactual_value(self, entity: int, relation: str, kind: str,
                             rng: np.random.Generator) -> str:
        """Another value of the fact, drawn as the world draws its values, so nothing in
        the value tells it apart (no shift or scale of the true one, which would make it
        a value found nowhere else). `conflicting`: the value a family sibling has for the
        relation (the confusion a real corpus holds), else as `stale`; `stale`: a literal
        drawn again by the world's own rule for the entity's type (`literal_draw`), or
        another entity of the object's type."""
        true = self.answer(entity, relation)
        literal = relation == LITERALS[self.types[entity]]
        if kind == "conflicting":
            values = [self.answer(s, relation) for s in self.siblings(entity)]
            values = sorted({v for v in values if v != true})
            if values:
                return values[int(rng.integers(len(values)))]
        if literal:
            for _ in range(64):
                new = format_literal(relation, self.literal_draw(entity, rng))
                if new != true:
                    return new
            return format_literal(relation, int(self.graph.nodes[entity][relation]) + 1)
        obj_type = self.types[self.target(entity, relation)]
        pool = [int(e) for e in self.by_type[obj_type].tolist() if self.names[e] != true]
        return self.names[pool[int(rng.integers(len(pool)))]]

    def literal_draw(self, entity: int, rng: np.random.Generator) -> int:
        """The entity's literal drawn again by the rule that drew it (`literal_values`):
        a year in its type's range or after its maker's, a population as its type's."""
        t = self.types[entity]
        if t in YEAR_RANGES:
            return int(rng.integers(*YEAR_RANGES[t]))
        if t in YEARS_AFTER:
            rel, lo, hi = YEARS_AFTER[t]
            maker = self.target(entity, rel)
            year = self.graph.nodes[maker][LITERALS[self.types[maker]]]
            return int(years_after(rng, np.asarray([year]), lo, hi)[0])
        if t == "city":
            return int(city_populations(rng, 1)[0])
        cities = [c for c, _, key in self.graph.in_edges(entity, keys=True)
                  if key == "located_in"]
        total = float(sum(int(self.graph.nodes[c]["population"]) for c in cities))
        return int(country_populations(rng, np.asarray([total]))[0])

    def counterfactual_paragraph(self, entity: int, relation: str, value: str,
                                 *seed_parts: object) -> Passage:
        """A paragraph of the entity's article as the world's own generator writes it when
        the fact says `value`: the article is drawn afresh (paragraph count, where each
        fact is stated, sentence forms, fillers) and one of its paragraphs stating the
        fact is taken at random, the intro among them: it opens as a paragraph at that
        place opens, so where it stands in its article is not a tell (the real passage it
        contradicts is as often an intro). Its `index` is the article's next paragraph
        number, as a new passage would get (ids are opaque: `trace.evidence_id`)."""
        dice = txt.Dice(seed_int("counterfactual", self.seed, self.size, entity, relation,
                                  value, *seed_parts))
        t, name = self.types[entity], self.names[entity]
        slot = self.fact_slot(entity, relation)
        facts: list[txt.Fact] = []
        for rel, obj_type in ENTITY_RELATIONS[t]:
            facts.append((rel, self.answer(entity, rel), txt.TYPE_NOUN[obj_type]))
        facts.append((LITERALS[t], self.answer(entity, LITERALS[t]), ""))
        facts[slot] = (relation, value, facts[slot][2])
        siblings = [self.names[m] for m in self.siblings(entity)]
        refs = txt.other_refs(t, self.stem(entity), dice)
        count, placement = txt.place_facts(dice, fact_redundancies(dice, self.redundancy,
                                                               len(facts)))
        paragraphs = txt.render_article(dice, t, name, refs, facts, placement, count, siblings,
                                        self.details[entity])
        former = txt.Dice(seed_int("former", "counterfactual", self.seed, self.size, entity,
                                   relation, value, *seed_parts))
        add_former(former, paragraphs, facts, placement, refs, name, self.former_objects[t])
        chosen = dice.pick(list(placement[slot]))
        return Passage(title=name, text=paragraphs[chosen], index=len(self.article(entity)))

    def id_of(self, name: str) -> int:
        """Entity number of a name (KeyError if the world has no such entity)."""
        return self._by_name[name]

    @functools.cached_property
    def former_objects(self) -> dict[str, dict[str, list[str]]]:
        """`former_objects` of this world (computed once)."""
        return former_objects(self.by_type, self.names)

    def former_rate(self) -> tuple[int, int]:
        """(facts that state a former value, facts that could): the clean world's
        disagreement (`_synthetic_former.FORMER_P` of the changeable facts, drawn)."""
        changeable = sum(1 for e in range(self.size)
                         for rel, _ in self.relations(e) if rel in FORMER_FACTS)
        changeable += sum(1 for e in range(self.size)
                          if LITERALS[self.types[e]] in FORMER_FACTS)
        return len(self.former), changeable

    def siblings(self, entity: int) -> tuple[int, ...]:
        """The other members of the entity's family (its confusers)."""
        return tuple(m for m in self.families[int(self.family_of[entity])] if m != entity)

    def stem(self, entity: int) -> str:
        """The invented word the entity shares with its family."""
        stem: str = self.graph.nodes[entity]["stem"]
        return stem

    def relations(self, entity: int) -> list[tuple[str, int]]:
        """Outgoing (relation, object) pairs in insertion order."""
        return [(rel, obj) for obj, keys in self.graph.succ[entity].items() for rel in keys]

    def target(self, entity: int, relation: str) -> int:
        """The object of an entity relation (KeyError if the entity lacks it)."""
        for rel, obj in self.relations(entity):
            if rel == relation:
                return obj
        raise KeyError(f"{self.names[entity]!r} has no relation {relation!r}")

    def sources(self, obj: int, relation: str) -> list[int]:
        """Entities whose `relation` points at `obj`."""
        return [src for src, keys in self.graph.pred[obj].items() if relation in keys]

    def answer(self, entity: int, relation: str) -> str:
        """The answer text of a fact, exactly as the entity's passage states it."""
        if relation == LITERALS[self.types[entity]]:
            return format_literal(relation, self.graph.nodes[entity][relation])
        return self.names[self.target(entity, relation)]


def former_objects(by_type: dict[str, np.ndarray], names: Sequence[str]
                   ) -> dict[str, dict[str, list[str]]]:
    """Subject type → relation → the names a former object of that relation may be (every
    entity of the object's type), for the relations that state a former value."""
    return {t: {rel: [names[e] for e in by_type[obj_type].tolist()]
                for rel, obj_type in ENTITY_RELATIONS[t] if rel in FORMER_FACTS}
            for t in TYPES}


def format_literal(relation: str, value: int) -> str:
    """A literal as passages and answers state it (a population with thousands commas)."""
    return f"{value:,}" if relation == "population" else str(value)


def fact_redundancies(dice: txt.Dice, redundancy: Redundancy, n: int) -> list[int]:
    """In how many passages each of `n` facts is stated, drawn from `redundancy`."""
    if isinstance(redundancy, int):
        return [redundancy] * n
    return [1 + txt.weighted_index(dice, redundancy) for _ in range(n)]

"""Building the synthetic world: entities, relations, literals, passages.

See `cuer_agent.data.synthetic` for the design; this module is its first half
(the world), `_synthetic_questions` the second (questions over it).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Passage
from cuer_agent.data._synthetic_literals import (
    YEAR_RANGES,
    YEARS_AFTER,
    Targets,
    city_populations,
    country_populations,
    literal_values,
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

def _seed_int(*parts: object) -> int:
    """A 64-bit seed from a stable hash of the parts (never Python's `hash()`)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def seeded_rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(_seed_int(*parts))


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
                new = _format_literal(relation, self.literal_draw(entity, rng))
                if new != true:
                    return new
            return _format_literal(relation, int(self.graph.nodes[entity][relation]) + 1)
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
        fact is taken at random, never the intro: its `index` is the article's next
        paragraph number, as a new paragraph would get, so it opens as a paragraph past
        the first opens (an article has one intro). A fact the draw states only in the
        intro is moved to paragraph 1."""
        dice = txt.Dice(_seed_int("counterfactual", self.seed, self.size, entity, relation,
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
        count, placement = txt.place_facts(dice, _redundancies(dice, self.redundancy,
                                                               len(facts)))
        if not any(placement[slot]):  # stated only in the intro
            count, placement[slot] = max(count, 2), (1,)
        paragraphs = txt.render_article(dice, t, name, refs, facts, placement, count, siblings,
                                        self.details[entity])
        chosen = dice.pick([j for j in placement[slot] if j > 0])
        return Passage(title=name, text=paragraphs[chosen], index=len(self.article(entity)))

    def id_of(self, name: str) -> int:
        """Entity number of a name (KeyError if the world has no such entity)."""
        return self._by_name[name]

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
            return _format_literal(relation, self.graph.nodes[entity][relation])
        return self.names[self.target(entity, relation)]



def _format_literal(relation: str, value: int) -> str:
    return f"{value:,}" if relation == "population" else str(value)


def build_world(seed: int = 0, size: int = 2000,
                redundancy: Redundancy = REDUNDANCY_MIX) -> World:
    """Build the seeded world of `size` entities (one article of 1-4 paragraphs each).
    Deterministic in (seed, size, redundancy)."""
    if size < MIN_SIZE:
        raise ConfigError(f"synthetic world size must be at least {MIN_SIZE}, got {size}")
    redundancy = check_redundancy(redundancy)
    with gc_paused():
        return _build_world(seed, size, redundancy)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector. A world is millions of small containers without
    reference cycles; each full collection rescans all of them, which doubled the build
    time at 10^6 passages and made question generation on a large world 300x slower."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _build_world(seed: int, size: int, redundancy: Redundancy) -> World:
    rng = seeded_rng("world", seed, size)
    by_type, fam_local = _layout(rng, size)
    type_of = [""] * size
    for t, ents in by_type.items():
        for e in ents.tolist():
            type_of[e] = t
    family_of, families = _families(by_type, fam_local, size)
    stems, given = _stems(rng, len(families), max(8, len(by_type["person"]) // 12))
    names = _names(rng, by_type, fam_local, family_of, stems, given, size)
    targets = _relation_targets(rng, by_type, fam_local)
    values = literal_values(rng, by_type, targets, size)
    graph = _graph(seed, size, names, type_of, family_of, stems, by_type, targets, values)
    articles = _render_passages(seed, size, by_type, families, family_of, names, stems,
                                targets, values, redundancy)
    by_name = {name: e for e, name in enumerate(names)}
    if len(by_name) != size:  # unique by construction; a cheap guard against regressions
        raise AssertionError("synthetic entity names are not unique")
    return World(seed=seed, size=size, graph=graph, passages=articles.passages,
                 start=articles.start, fact_mask=articles.fact_mask, redundancy=redundancy,
                 details=articles.details, names=names,
                 types=type_of, by_type=by_type, families=families, family_of=family_of,
                 _by_name=by_name)


def _type_counts(size: int) -> dict[str, int]:
    """Entities per type: floor of the shares, the remainder by largest fraction."""
    raw = {t: share * size for t, share in TYPE_SHARES.items()}
    counts = {t: int(v) for t, v in raw.items()}
    by_fraction = sorted(TYPES, key=lambda t: (-(raw[t] - counts[t]), TYPES.index(t)))
    for t in by_fraction[: size - sum(counts.values())]:
        counts[t] += 1
    return counts


def _family_sizes(rng: np.random.Generator, count: int) -> np.ndarray:
    """Split `count` (>= 3) entities into families of 3 and 4, about a quarter of 4, in
    random order; counts that 3s and 4s cannot make (5) get one bigger family."""
    rest = count % 3
    fours = int(count * FOUR_FAMILY_SHARE / 3.25)
    fours -= (fours - rest) % 3  # 3·threes + 4·fours == count needs fours ≡ count (mod 3)
    if fours < 0:
        sizes = np.full(count // 3, 3)
        sizes[0] += rest
    else:
        sizes = np.array([4] * fours + [3] * ((count - 4 * fours) // 3))
    return rng.permutation(sizes)


def _layout(rng: np.random.Generator,
            size: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Entity numbers per type (shuffled over the corpus) and each one's family index
    within its type (members of a family are contiguous in `by_type[t]`)."""
    perm = rng.permutation(size)
    by_type, fam_local, start = {}, {}, 0
    for t, count in _type_counts(size).items():
        by_type[t] = perm[start:start + count]
        sizes = _family_sizes(rng, count)
        fam_local[t] = np.repeat(np.arange(len(sizes)), sizes)
        start += count
    return by_type, fam_local


def _families(by_type: dict[str, np.ndarray], fam_local: dict[str, np.ndarray],
              size: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Global family ids per entity and the member tuple of each family."""
    family_of = np.empty(size, dtype=np.int64)
    families: list[tuple[int, ...]] = []
    for t in TYPES:
        ents, local = by_type[t], fam_local[t]
        family_of[ents] = local + len(families)
        bounds = np.flatnonzero(np.diff(local)) + 1
        families.extend(tuple(chunk.tolist()) for chunk in np.split(ents, bounds))
    return family_of, families


def _stems(rng: np.random.Generator, n_families: int, n_given: int) -> tuple[list[str], list[str]]:
    """Family stems and a pool of given names, all distinct from each other and from every
    word of the name patterns (so a stem is always the distinctive name part)."""
    words = txt.invented_words(rng, n_families + n_given, txt.pattern_words())
    return words[:n_families], words[n_families:]


def _distinct_in_families(rng: np.random.Generator, pool: int, fam: np.ndarray) -> np.ndarray:
    """One draw from range(pool) per entity, redrawn until family members differ."""
    idx = rng.integers(pool, size=len(fam))
    for _ in range(64):  # converges in a few rounds whenever pool >= family size
        key = fam.astype(np.int64) * pool + idx
        first = np.unique(key, return_index=True)[1]
        dup = np.ones(len(key), dtype=bool)
        dup[first] = False
        if not dup.any():
            break
        idx[dup] = rng.integers(pool, size=int(dup.sum()))
    return idx


def _names(rng: np.random.Generator, by_type: dict[str, np.ndarray],
           fam_local: dict[str, np.ndarray], family_of: np.ndarray, stems: list[str],
           given: list[str], size: int) -> list[str]:
    names = [""] * size
    for t in TYPES:
        ents, fam = by_type[t], fam_local[t]
        stem_of = family_of[ents].tolist()
        if t == "person":
            first = _distinct_in_families(rng, len(given), fam).tolist()
            for e, f, g in zip(ents.tolist(), stem_of, first, strict=True):
                names[e] = f"{given[g]} {stems[f]}"
            continue
        patterns = txt.NAME_PATTERNS[t]
        pick = _distinct_in_families(rng, len(patterns), fam).tolist()
        for e, f, p in zip(ents.tolist(), stem_of, pick, strict=True):
            names[e] = patterns[p].format(stem=stems[f])
    return names


def _relation_targets(rng: np.random.Generator, by_type: dict[str, np.ndarray],
                      fam_local: dict[str, np.ndarray]) -> Targets:
    targets: Targets = {}
    for t in TYPES:
        for rel, obj_type in ENTITY_RELATIONS[t]:
            if rel == "capital":
                continue  # derived from the cities below, to stay consistent
            pool = by_type[obj_type]
            targets[t, rel] = pool[_distinct_in_families(rng, len(pool), fam_local[t])]
    targets["city", "located_in"] = _cover_countries(rng, by_type, targets["city", "located_in"])
    targets["country", "capital"] = _capitals(rng, by_type, targets["city", "located_in"])
    return targets


def _cover_countries(rng: np.random.Generator, by_type: dict[str, np.ndarray],
                     country_of_city: np.ndarray) -> np.ndarray:
    """Move cities so every country has one (a capital needs a city in its country).
    A country without cities has no city of any family, so family members stay distinct."""
    country_of_city = country_of_city.copy()
    countries, cities = by_type["country"], by_type["city"]
    slot = {int(c): i for i, c in enumerate(countries.tolist())}
    count = np.bincount([slot[int(c)] for c in country_of_city.tolist()],
                        minlength=len(countries))
    for empty in np.flatnonzero(count == 0).tolist():
        while True:
            j = int(rng.integers(len(cities)))
            old = slot[int(country_of_city[j])]
            if count[old] >= 2:
                break
        country_of_city[j] = countries[empty]
        count[old] -= 1
        count[empty] += 1
    return country_of_city


def _capitals(rng: np.random.Generator, by_type: dict[str, np.ndarray],
              country_of_city: np.ndarray) -> np.ndarray:
    """One random city located in each country, aligned with `by_type["country"]`."""
    countries, cities = by_type["country"], by_type["city"]
    order = np.lexsort((rng.random(len(cities)), country_of_city))
    sorted_countries = country_of_city[order]
    first = np.r_[True, sorted_countries[1:] != sorted_countries[:-1]]
    capital_of = dict(zip(sorted_countries[first].tolist(), cities[order][first].tolist(),
                          strict=True))
    return np.array([capital_of[c] for c in countries.tolist()], dtype=cities.dtype)


def _graph(seed: int, size: int, names: list[str], type_of: list[str],
           family_of: np.ndarray, stems: list[str], by_type: dict[str, np.ndarray],
           targets: Targets, values: np.ndarray) -> nx.MultiDiGraph[int]:
    """Nodes are entity numbers with their attributes; edges are keyed by relation."""
    graph: nx.MultiDiGraph[int] = nx.MultiDiGraph(seed=seed, size=size)
    fam = family_of.tolist()
    vals = values.tolist()
    graph.add_nodes_from(
        (e, {"name": names[e], "type": type_of[e], "stem": stems[fam[e]], "family": fam[e],
             LITERALS[type_of[e]]: vals[e]})
        for e in range(size))
    add_edge = graph.add_edge  # per-edge calls skip the adjacency views add_edges_from builds
    for (t, rel), objs in targets.items():
        for subject, obj in zip(by_type[t].tolist(), objs.tolist(), strict=True):
            add_edge(subject, obj, rel)
    return graph


# --- passages ---------------------------------------------------------------------------

def _person_details(targets: Targets) -> dict[int, str]:
    """Intro detail of persons who made something ("film director and writer"), so an
    intro never contradicts the graph."""
    details: dict[int, list[str]] = {}
    for (_, rel), objs in targets.items():
        role = txt.ROLE_DETAILS.get(rel)
        if role is not None:
            for person in np.unique(objs).tolist():
                details.setdefault(person, []).append(role)
    return {p: " and ".join([", ".join(roles[:-1]), roles[-1]]) if len(roles) > 1 else roles[0]
            for p, roles in details.items()}


@dataclass(frozen=True)
class _Articles:
    passages: list[Passage]
    start: np.ndarray
    fact_mask: np.ndarray
    details: list[str]


def _redundancies(dice: txt.Dice, redundancy: Redundancy, n: int) -> list[int]:
    if isinstance(redundancy, int):
        return [redundancy] * n
    return [1 + txt.weighted_index(dice, redundancy) for _ in range(n)]


def _render_passages(seed: int, size: int, by_type: dict[str, np.ndarray],
                     families: list[tuple[int, ...]], family_of: np.ndarray, names: list[str],
                     stems: list[str], targets: Targets, values: np.ndarray,
                     redundancy: Redundancy) -> _Articles:
    """Every entity's article (one passage per paragraph, `index` = paragraph number),
    drawn in a fixed order from one seeded generator, and where each fact is stated."""
    dice = txt.Dice(_seed_int("text", seed, size))
    person_details = _person_details(targets)
    fam, vals = family_of.tolist(), values.tolist()
    paragraphs: list[list[str]] = [[] for _ in range(size)]
    fact_mask = np.zeros((size, MAX_FACTS), dtype=np.uint8)
    details = [""] * size
    for t in TYPES:
        rels = [(rel, txt.TYPE_NOUN[obj_type], targets[t, rel].tolist())
                for rel, obj_type in ENTITY_RELATIONS[t]]
        lit = LITERALS[t]
        for j, e in enumerate(by_type[t].tolist()):
            facts = [(rel, names[objs[j]], kind) for rel, kind, objs in rels]
            facts.append((lit, _format_literal(lit, vals[e]), ""))
            siblings = [names[m] for m in families[fam[e]] if m != e]
            detail = person_details.get(e) or dice.pick(txt.INTRO_DETAILS[t])
            details[e] = detail
            refs = txt.other_refs(t, stems[fam[e]], dice)
            rs = _redundancies(dice, redundancy, len(facts))
            count, placement = txt.place_facts(dice, rs)
            paragraphs[e] = txt.render_article(dice, t, names[e], refs, facts, placement, count,
                                               siblings, detail)
            for slot, where in enumerate(placement):
                fact_mask[e, slot] = sum(1 << p for p in where)
    start = np.zeros(size + 1, dtype=np.int64)
    np.cumsum([len(p) for p in paragraphs], out=start[1:])
    passages = [Passage(title=names[e], text=text, index=i)
                for e in range(size) for i, text in enumerate(paragraphs[e])]
    return _Articles(passages, start, fact_mask, details)

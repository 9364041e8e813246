"""The synthetic multi-hop world: the embedded default data set, with certified per-hop labels.

`cuer-agent evaluate --hops 3` must run anywhere, offline, with gold labels for every hop.
This module builds a fictional world, writes one encyclopedia passage per entity, and
composes multi-hop questions whose every hop is known.

**The world.** A seeded `networkx.MultiDiGraph` whose nodes are entity numbers
`0..size-1` (node attributes: `name`, `type`, `stem`, `family` and the type's literal,
e.g. `release_year`) and whose edges are keyed by relation name
(`graph.edges(keys=True)` yields `(subject, object, relation)`). Nine entity types with
typed relations (`ENTITY_RELATIONS`) and one literal each (`LITERALS`): a film is
directed_by a person and produced_by a company, a person is born_in a city and
educated_at a university, a city is located_in a country, a country has a capital,
and so on. It is kept consistent: a country's capital is one of the cities located in
it, every country has a city, a film is released after its director was born, an album
after its band formed, a country is more populous than its cities together.

**Confusers.** Entities come in families of 3-4 of one type that share an invented
word (`stem`): a surname ("Pell Varnick", "Ansa Varnick"), a word in titles
("Quorin Rising", "The Quorin Letters") or in place names ("Tolmere", "Port Tolmere").
Every member of a type has every relation of the type, and family members get distinct
objects, so each fact of an entity has at least two same-relation, same-stem confusers
with a different answer. Passages sometimes name a sibling ("It is often confused
with The Quorin Letters").

**Names are invented**: stems and given names are syllable-generated words, combined
with common English words for titles, so a language model cannot answer from memory.
Stems are drawn without replacement from one set, which makes every name unique.

**Passages.** One per entity, `Passage(title=name, text=..., index=entity number)`:
an intro, one sentence per fact in varied forms (`_synthetic_text.FACTS`; the subject
is the name, a surname, "the film" or a pronoun), filler and sometimes a sibling
mention. Each fact is stated in its subject's passage only, in a sentence that contains
the object verbatim; most fact forms share a cue word (or a simple morphological
variant) with a question paraphrase of their relation.

**Questions.** Chains of 1-4 hops start at a named entity and follow relations; the
final relation gives the question template and each earlier one a noun phrase
("In which country is the birthplace of the director of Quorin Rising?"). Comparisons
("How many years apart were X and Y released?") and yes/no questions ("Was X released
before Y?", "Were X and Y born in the same city?") take two hops; like HotpotQA's
comparison questions they name both entities, but never their answer. Every example
carries per-hop gold (`HopGold`): a single-hop sub-question with the bridge resolved,
the support passage title, the hop answer and the relation. Drafts that name their
answer, or (chains) any hop answer or support title beyond the first, are rejected and
redrawn, as are duplicates. Fewer questions are always a prefix of more.

**Determinism.** All randomness comes from `numpy.random.Generator` / `random.Random`
seeded with sha256 hashes of (purpose, seed, size, ...); nothing iterates over an
unsorted set, nothing uses `hash()`. The same arguments give the same bytes in any
process.

**Measured** (seed 7, n=200, hops=3, default size 2,000; BM25 top 5 over the whole corpus
with the whole question as the query; asserted in tests/test_synthetic.py): the hop-1
support passage is retrieved for 100% of the questions, the hop-2 and last-hop supports
for 0%; no question contains its answer, and no multi-hop chain names its last-hop
support. `build_world(size=1_000_000)` took 55 s with a 2.4 GB peak RSS on the shared
two-core machine; the default size builds in 0.2 s.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Dataset, Example, HopGold, Passage
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
LAST_YEAR = 2024
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


# --- seeding -----------------------------------------------------------------------------

def _seed_int(*parts: object) -> int:
    """A 64-bit seed from a stable hash of the parts (never Python's `hash()`)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(_seed_int(*parts))


# --- the world -----------------------------------------------------------------------------

@dataclass(eq=False, repr=False)
class World:
    """A built synthetic world: the graph, one passage per entity, and lookups."""

    seed: int
    size: int
    graph: nx.MultiDiGraph
    passages: list[Passage]
    """`passages[e]` is entity `e`'s passage (`index == e`, `title == name`)."""
    names: list[str]
    types: list[str]
    by_type: dict[str, np.ndarray]
    """Entity numbers of each type."""
    families: list[tuple[int, ...]]
    family_of: np.ndarray
    _by_name: dict[str, int]

    def __repr__(self) -> str:
        return (f"World(seed={self.seed}, size={self.size}, "
                f"edges={self.graph.number_of_edges()})")

    def id_of(self, name: str) -> int:
        """Entity number of a name (KeyError if the world has no such entity)."""
        return self._by_name[name]

    def siblings(self, entity: int) -> tuple[int, ...]:
        """The other members of the entity's family (its confusers)."""
        return tuple(m for m in self.families[int(self.family_of[entity])] if m != entity)

    def stem(self, entity: int) -> str:
        """The invented word the entity shares with its family."""
        return self.graph.nodes[entity]["stem"]

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


def build_world(seed: int = 0, size: int = 2000) -> World:
    """Build the seeded world of `size` entities (= passages). Deterministic in (seed, size)."""
    if size < MIN_SIZE:
        raise ConfigError(f"synthetic world size must be at least {MIN_SIZE}, got {size}")
    with _gc_paused():
        return _build_world(seed, size)


@contextmanager
def _gc_paused() -> Iterator[None]:
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


def _build_world(seed: int, size: int) -> World:
    rng = _rng("world", seed, size)
    by_type, fam_local = _layout(rng, size)
    type_of = [""] * size
    for t, ents in by_type.items():
        for e in ents.tolist():
            type_of[e] = t
    family_of, families = _families(by_type, fam_local, size)
    stems, given = _stems(rng, len(families), max(8, len(by_type["person"]) // 12))
    names = _names(rng, by_type, fam_local, family_of, stems, given, size)
    targets = _relation_targets(rng, by_type, fam_local)
    values = _literal_values(rng, by_type, targets, size)
    graph = _graph(seed, size, names, type_of, family_of, stems, by_type, targets, values)
    texts = _render_passages(seed, size, by_type, families, family_of, names, stems, targets,
                             values)
    passages = [Passage(title=names[e], text=texts[e], index=e) for e in range(size)]
    by_name = {name: e for e, name in enumerate(names)}
    if len(by_name) != size:  # unique by construction; a cheap guard against regressions
        raise AssertionError("synthetic entity names are not unique")
    return World(seed=seed, size=size, graph=graph, passages=passages, names=names,
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


Targets = dict[tuple[str, str], np.ndarray]
"""(subject type, relation) -> object entity per subject, aligned with `by_type[type]`."""


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


def _literal_values(rng: np.random.Generator, by_type: dict[str, np.ndarray],
                    targets: Targets, size: int) -> np.ndarray:
    """The literal of every entity, consistent with the graph (works after their makers'
    births, albums after their band formed, countries outnumber their cities)."""
    v = np.zeros(size, dtype=np.int64)

    def n(t: str) -> int:
        return len(by_type[t])

    v[by_type["person"]] = rng.integers(1880, 1991, size=n("person"))
    for t, rel, lo, hi in (("film", "directed_by", 24, 70), ("book", "written_by", 20, 75),
                           ("company", "founded_by", 22, 60)):
        v[by_type[t]] = _years_after(rng, v[targets[t, rel]], lo, hi)
    v[by_type["university"]] = rng.integers(1150, 1901, size=n("university"))
    v[by_type["band"]] = rng.integers(1950, LAST_YEAR - 4, size=n("band"))
    v[by_type["album"]] = _years_after(rng, v[targets["album", "recorded_by"]], 0, 25)
    city_pop = np.exp(rng.normal(11.5, 1.2, size=n("city"))).clip(2_000, 9_000_000)
    v[by_type["city"]] = (city_pop // 10 * 10).astype(np.int64)
    totals = np.zeros(size, dtype=np.float64)
    np.add.at(totals, targets["city", "located_in"], v[by_type["city"]])
    factor = rng.uniform(1.5, 4.0, size=n("country"))
    v[by_type["country"]] = (totals[by_type["country"]] * factor // 1000 * 1000).astype(np.int64)
    return v


def _years_after(rng: np.random.Generator, base: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """A year uniformly in [base + lo, min(base + hi, LAST_YEAR)] (base + lo <= LAST_YEAR)."""
    top = np.minimum(base + hi, LAST_YEAR)
    return base + lo + (rng.random(len(base)) * (top - base - lo + 1)).astype(np.int64)


def _graph(seed: int, size: int, names: list[str], type_of: list[str],
           family_of: np.ndarray, stems: list[str], by_type: dict[str, np.ndarray],
           targets: Targets, values: np.ndarray) -> nx.MultiDiGraph:
    """Nodes are entity numbers with their attributes; edges are keyed by relation."""
    graph = nx.MultiDiGraph(seed=seed, size=size)
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


def _render_passages(seed: int, size: int, by_type: dict[str, np.ndarray],
                     families: list[tuple[int, ...]], family_of: np.ndarray, names: list[str],
                     stems: list[str], targets: Targets, values: np.ndarray) -> list[str]:
    """Every entity's passage text, drawn in a fixed order from one seeded generator."""
    dice = txt.Dice(_seed_int("text", seed, size))
    person_details = _person_details(targets)
    fam, vals = family_of.tolist(), values.tolist()
    texts = [""] * size
    for t in TYPES:
        rels = [(rel, txt.TYPE_NOUN[obj_type], targets[t, rel].tolist())
                for rel, obj_type in ENTITY_RELATIONS[t]]
        lit = LITERALS[t]
        for j, e in enumerate(by_type[t].tolist()):
            facts = [(rel, names[objs[j]], kind) for rel, kind, objs in rels]
            facts.append((lit, _format_literal(lit, vals[e]), ""))
            siblings = [names[m] for m in families[fam[e]] if m != e]
            detail = person_details.get(e) or dice.pick(txt.INTRO_DETAILS[t])
            refs = txt.other_refs(t, stems[fam[e]], dice)
            texts[e] = txt.render_passage(dice, t, names[e], refs, facts, siblings, detail)
    return texts


# --- questions --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Hop:
    subject: int
    relation: str
    answer: str
    obj: int | None
    """The object entity; None for a literal (year, population)."""


@dataclass(frozen=True)
class _Draft:
    """A composed question before it becomes an `Example`."""

    key: tuple[object, ...]
    """What the question asks, independent of wording (for de-duplication)."""
    question: str
    answer: str
    hops: tuple[_Hop, ...]
    qtype: str
    forbidden: tuple[str, ...]
    """Strings the question must not contain as whole words (leakage)."""


def _chain_paths() -> dict[int, list[tuple[str, tuple[str, ...]]]]:
    """Every relation path of 1..MAX_HOPS hops: hops -> [(start type, relations)].
    Literals only end a path; a step that always returns to the previous entity is skipped."""
    paths: dict[int, list[tuple[str, tuple[str, ...]]]] = {h: [] for h in range(1, MAX_HOPS + 1)}

    def walk(start: str, t: str, rels: tuple[str, ...]) -> None:
        if rels:
            paths[len(rels)].append((start, rels))
        if len(rels) == MAX_HOPS:
            return
        paths[len(rels) + 1].append((start, (*rels, LITERALS[t])))
        for rel, obj_type in ENTITY_RELATIONS[t]:
            if not rels or (rels[-1], rel) not in FORBIDDEN_STEPS:
                walk(start, obj_type, (*rels, rel))

    for t in TYPES:
        walk(t, t, ())
    return paths


CHAIN_PATHS = _chain_paths()


def _mentions(text: str, phrase: str) -> bool:
    """Whole-word, case-insensitive containment (a compiled regex per phrase would cost
    more than the rest of question generation)."""
    text, phrase = text.lower(), phrase.lower()
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if not (start and _is_word_char(text[start - 1])) and not (
                end < len(text) and _is_word_char(text[end])):
            return True
        start = text.find(phrase, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _entity(rng: np.random.Generator, world: World, t: str) -> int:
    ents = world.by_type[t]
    return int(ents[rng.integers(len(ents))])


def _kind(world: World, hop: _Hop) -> str:
    return txt.TYPE_NOUN[world.types[hop.obj]] if hop.obj is not None else ""


def _sub_question(rng: np.random.Generator, world: World, hop: _Hop) -> str:
    """The single-hop question of a hop, its subject named."""
    return _pick(rng, txt.QUESTIONS[hop.relation]).format(s=world.names[hop.subject],
                                                          kind=_kind(world, hop))


def _hop(world: World, subject: int, relation: str) -> _Hop:
    if relation == LITERALS[world.types[subject]]:
        return _Hop(subject, relation, world.answer(subject, relation), None)
    obj = world.target(subject, relation)
    return _Hop(subject, relation, world.names[obj], obj)


def _chain(rng: np.random.Generator, world: World, hops: int) -> _Draft | None:
    """A relation chain from a random entity, phrased by nesting noun phrases."""
    paths = CHAIN_PATHS[hops]
    start_type, relations = paths[int(rng.integers(len(paths)))]
    subject = _entity(rng, world, start_type)
    chain: list[_Hop] = []
    seen = {subject}
    for relation in relations:
        hop = _hop(world, subject, relation)
        if hop.obj in seen:  # a chain that revisits an entity is a degenerate question
            return None
        chain.append(hop)
        if hop.obj is not None:
            seen.add(hop.obj)
            subject = hop.obj
    question = txt.chain_question(lambda forms: _pick(rng, forms), world.names[chain[0].subject],
                                  [(h.relation, _kind(world, h)) for h in chain])
    # Nothing after the first hop may be named: each bridge has to be found by reading.
    forbidden = tuple(h.answer for h in chain) + tuple(world.names[h.subject] for h in chain[1:])
    return _Draft(key=("chain", chain[0].subject, relations), question=question,
                  answer=chain[-1].answer, hops=tuple(chain), qtype="chain", forbidden=forbidden)


def _pair(rng: np.random.Generator, world: World, t: str) -> tuple[int, int]:
    """Two distinct entities of a type; half the time family siblings (confusers)."""
    a = _entity(rng, world, t)
    siblings = world.siblings(a)
    if rng.random() < 0.5:
        return a, siblings[int(rng.integers(len(siblings)))]
    b = _entity(rng, world, t)
    return a, b


YEAR_TYPES: tuple[str, ...] = tuple(t for t in TYPES if LITERALS[t] in txt.YEAR_VERBS)


def _comparison(rng: np.random.Generator, world: World) -> _Draft | None:
    """"How many years apart were X and Y released?" -> a number not in the question."""
    t = _pick(rng, YEAR_TYPES)
    relation = LITERALS[t]
    a, b = _pair(rng, world, t)
    ha, hb = _hop(world, a, relation), _hop(world, b, relation)
    gap = abs(int(ha.answer) - int(hb.answer))
    if a == b or gap == 0:
        return None
    question = _pick(rng, txt.COMPARE_APART).format(a=world.names[a], b=world.names[b],
                                                    verb=txt.YEAR_VERBS[relation])
    return _Draft(key=("comparison", relation, min(a, b), max(a, b)), question=question,
                  answer=str(gap), hops=(ha, hb), qtype="comparison", forbidden=(str(gap),))


SAME_TYPES: dict[str, tuple[str, ...]] = {
    rel: tuple(t for t in TYPES for r, _ in ENTITY_RELATIONS[t] if r == rel)
    for rel in txt.YESNO_SAME
}


def _yesno(rng: np.random.Generator, world: World) -> _Draft | None:
    """Before/after, larger-population or same-object questions, answered yes or no."""
    form = _pick(rng, ("before", "population", "same"))
    if form == "same":
        relation = _pick(rng, tuple(SAME_TYPES))
        t = _pick(rng, SAME_TYPES[relation])
        a, b = _pair(rng, world, t)
        co_sources = [s for s in world.sources(world.target(a, relation), relation) if s != a]
        if co_sources and rng.random() < 0.5:  # make "yes" about as common as "no"
            b = co_sources[int(rng.integers(len(co_sources)))]
        ha, hb = _hop(world, a, relation), _hop(world, b, relation)
        answer = "yes" if ha.obj == hb.obj else "no"
        template = _pick(rng, txt.YESNO_SAME[relation])
        question = template.format(a=world.names[a], b=world.names[b], kind=_kind(world, ha))
    else:
        t = _pick(rng, YEAR_TYPES if form == "before" else ("city", "country"))
        relation = LITERALS[t]
        a, b = _pair(rng, world, t)
        ha, hb = _hop(world, a, relation), _hop(world, b, relation)
        va, vb = (world.graph.nodes[e][relation] for e in (a, b))
        if va == vb:
            return None
        if form == "before":
            answer = "yes" if va < vb else "no"
            template = _pick(rng, txt.YESNO_BEFORE)
        else:
            answer = "yes" if va > vb else "no"
            template = _pick(rng, txt.YESNO_POPULATION)
        question = template.format(a=world.names[a], b=world.names[b],
                                   verb=txt.YEAR_VERBS.get(relation, ""))
    if a == b:
        return None
    return _Draft(key=("yesno", form, relation, min(a, b), max(a, b)), question=question,
                  answer=answer, hops=(ha, hb), qtype="yesno", forbidden=(answer,))


def _leaks(draft: _Draft) -> bool:
    return any(_mentions(draft.question, s) for s in draft.forbidden)


def _plan_block(rng: np.random.Generator, hops: int | None) -> list[tuple[str, int]]:
    """The (qtype, hops) of the next questions: one H-hop chain, or one shuffled block of
    the MIX (so any prefix of the questions follows its proportions closely)."""
    if hops is not None:
        return [("chain", hops)]
    block = [(qtype, h) for qtype, h, count in MIX for _ in range(count)]
    return [block[i] for i in rng.permutation(len(block)).tolist()]


def _draft(rng: np.random.Generator, world: World, qtype: str, hops: int) -> _Draft | None:
    if qtype == "chain":
        return _chain(rng, world, hops)
    return _comparison(rng, world) if qtype == "comparison" else _yesno(rng, world)


def _example(rng: np.random.Generator, world: World, draft: _Draft, example_id: str) -> Example:
    gold = tuple(HopGold(question=_sub_question(rng, world, h),
                         support_title=world.names[h.subject], answer=h.answer,
                         relation=h.relation) for h in draft.hops)
    aliases = (draft.answer.replace(",", ""),) if "," in draft.answer else ()
    return Example(
        id=example_id, dataset="synthetic", question=draft.question, answer=draft.answer,
        aliases=aliases, supporting_titles=tuple(dict.fromkeys(g.support_title for g in gold)),
        hops=gold, qtype=draft.qtype,
        meta={"relations": ">".join(h.relation for h in draft.hops)})


def make_questions(world: World, n: int, *, hops: int | None = None,
                   seed: int = 0) -> list[Example]:
    """`n` distinct questions over the world: with `hops=H` only H-hop chains, else a mix
    of 1-4 hop chains, comparisons and yes/no questions. Deterministic in
    (world, n, hops, seed); raises `ConfigError` if the world has too few questions."""
    if hops is not None and not 1 <= hops <= MAX_HOPS:
        raise ConfigError(f"synthetic questions have 1 to {MAX_HOPS} hops, got hops={hops}")
    if n < 0:
        raise ConfigError(f"number of questions must be >= 0, got {n}")
    with _gc_paused():
        return _make_questions(world, n, hops, seed)


def _make_questions(world: World, n: int, hops: int | None, seed: int) -> list[Example]:
    # Seeded without n, and drawn in the same order whatever n is: fewer questions are
    # always a prefix of more.
    rng = _rng("questions", world.seed, world.size, hops, seed)
    seen_keys: set[tuple[object, ...]] = set()
    seen_text: set[str] = set()
    examples: list[Example] = []
    plan: list[tuple[str, int]] = []
    while len(examples) < n:
        if not plan:
            plan = _plan_block(rng, hops)
        qtype, h = plan.pop(0)
        draft = _new_draft(rng, world, qtype, h, seen_keys, seen_text)
        if draft is None:
            what = f"{h}-hop chain" if hops is not None else "mixed"
            raise ConfigError(
                f"the synthetic world (seed={world.seed}, size={world.size}) ran out of distinct "
                f"{what} questions after {len(examples)} of the {n} asked; use a larger size "
                f"or fewer questions")
        seen_keys.add(draft.key)
        seen_text.add(draft.question)
        examples.append(_example(rng, world, draft, f"syn-{seed}-{len(examples)}"))
    return examples


def _new_draft(rng: np.random.Generator, world: World, qtype: str, hops: int,
               seen_keys: set[tuple[object, ...]], seen_text: set[str]) -> _Draft | None:
    """A valid question not asked yet, or None after MAX_MISSES failed draws."""
    for _ in range(MAX_MISSES):
        draft = _draft(rng, world, qtype, hops)
        if (draft is not None and not _leaks(draft) and draft.key not in seen_keys
                and draft.question not in seen_text):
            return draft
    return None


def default_size(n: int) -> int:
    """World size used by `load_synthetic` when none is given: ten passages per question,
    at least 2,000."""
    return max(2000, 10 * n)


def load_synthetic(n: int = 200, *, hops: int | None = None, seed: int = 0,
                   size: int | None = None) -> Dataset:
    """The synthetic data set: `n` questions over a world of `size` passages (the corpus)."""
    size = default_size(n) if size is None else size
    world = build_world(seed=seed, size=size)
    examples = make_questions(world, n, hops=hops, seed=seed)
    return Dataset(name="synthetic", examples=examples, corpus=world.passages,
                   source=f"synthetic:seed={seed},size={size},hops={hops}",
                   info={"seed": seed, "size": size, "hops": hops, "n": n})

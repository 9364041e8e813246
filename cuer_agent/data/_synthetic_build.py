"""Building a synthetic world: the entities of each type in families, their names,
relations and literal values, the graph of them, and one article per entity (a passage
per paragraph) with where each fact is stated. Deterministic in (seed, size,
redundancy). What a world is: `_synthetic_world`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Passage
from cuer_agent.data._synthetic_former import add_former
from cuer_agent.data._synthetic_literals import Targets, literal_values
from cuer_agent.data._synthetic_world import (
    ENTITY_RELATIONS,
    FOUR_FAMILY_SHARE,
    LITERALS,
    MAX_FACTS,
    MIN_SIZE,
    REDUNDANCY_MIX,
    TYPE_SHARES,
    TYPES,
    Redundancy,
    World,
    check_redundancy,
    fact_redundancies,
    format_literal,
    former_objects,
    seed_int,
    seeded_rng,
)
from cuer_agent.errors import ConfigError


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
                 details=articles.details, former=articles.former, names=names,
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
    former: dict[tuple[int, str], str]


def _render_passages(seed: int, size: int, by_type: dict[str, np.ndarray],
                     families: list[tuple[int, ...]], family_of: np.ndarray, names: list[str],
                     stems: list[str], targets: Targets, values: np.ndarray,
                     redundancy: Redundancy) -> _Articles:
    """Every entity's article (one passage per paragraph, `index` = paragraph number),
    drawn in a fixed order from one seeded generator, and where each fact is stated."""
    dice = txt.Dice(seed_int("text", seed, size))
    fdice = txt.Dice(seed_int("former", seed, size))  # apart: the articles' text is as before
    former: dict[tuple[int, str], str] = {}
    person_details = _person_details(targets)
    fam, vals = family_of.tolist(), values.tolist()
    paragraphs: list[list[str]] = [[] for _ in range(size)]
    fact_mask = np.zeros((size, MAX_FACTS), dtype=np.uint8)
    details = [""] * size
    others_of = former_objects(by_type, names)
    for t in TYPES:
        rels = [(rel, txt.TYPE_NOUN[obj_type], targets[t, rel].tolist())
                for rel, obj_type in ENTITY_RELATIONS[t]]
        lit = LITERALS[t]
        for j, e in enumerate(by_type[t].tolist()):
            facts = [(rel, names[objs[j]], kind) for rel, kind, objs in rels]
            facts.append((lit, format_literal(lit, vals[e]), ""))
            siblings = [names[m] for m in families[fam[e]] if m != e]
            detail = person_details.get(e) or dice.pick(txt.INTRO_DETAILS[t])
            details[e] = detail
            refs = txt.other_refs(t, stems[fam[e]], dice)
            rs = fact_redundancies(dice, redundancy, len(facts))
            count, placement = txt.place_facts(dice, rs)
            paragraphs[e] = txt.render_article(dice, t, names[e], refs, facts, placement, count,
                                               siblings, detail)
            stated = add_former(fdice, paragraphs[e], facts, placement, refs, names[e],
                                others_of[t])
            former.update({(e, rel): value for rel, value in stated.items()})
            for slot, where in enumerate(placement):
                fact_mask[e, slot] = sum(1 << p for p in where)
    start = np.zeros(size + 1, dtype=np.int64)
    np.cumsum([len(p) for p in paragraphs], out=start[1:])
    passages = [Passage(title=names[e], text=text, index=i)
                for e in range(size) for i, text in enumerate(paragraphs[e])]
    return _Articles(passages, start, fact_mask, details, former)

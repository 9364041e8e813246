"""Composing questions over a synthetic world: chains, comparisons, yes/no.

See `cuer_agent.data.synthetic` for the design.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuer_agent.data import _synthetic_phrasing as phr
from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Example, HopGold
from cuer_agent.data._synthetic_build import gc_paused
from cuer_agent.data._synthetic_world import (
    ENTITY_RELATIONS,
    FORBIDDEN_STEPS,
    LITERALS,
    MAX_HOPS,
    MAX_MISSES,
    MIX,
    TYPES,
    World,
    seeded_rng,
)
from cuer_agent.errors import ConfigError

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
    return _pick(rng, phr.QUESTIONS[hop.relation]).format(s=world.names[hop.subject],
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
    question = phr.chain_question(lambda forms: _pick(rng, forms), world.names[chain[0].subject],
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


YEAR_TYPES: tuple[str, ...] = tuple(t for t in TYPES if LITERALS[t] in phr.YEAR_VERBS)


def _comparison(rng: np.random.Generator, world: World) -> _Draft | None:
    """"How many years apart were X and Y released?" -> a number not in the question."""
    t = _pick(rng, YEAR_TYPES)
    relation = LITERALS[t]
    a, b = _pair(rng, world, t)
    ha, hb = _hop(world, a, relation), _hop(world, b, relation)
    gap = abs(int(ha.answer) - int(hb.answer))
    if a == b or gap == 0:
        return None
    question = _pick(rng, phr.COMPARE_APART).format(a=world.names[a], b=world.names[b],
                                                    verb=phr.YEAR_VERBS[relation])
    return _Draft(key=("comparison", relation, min(a, b), max(a, b)), question=question,
                  answer=str(gap), hops=(ha, hb), qtype="comparison", forbidden=(str(gap),))


SAME_TYPES: dict[str, tuple[str, ...]] = {
    rel: tuple(t for t in TYPES for r, _ in ENTITY_RELATIONS[t] if r == rel)
    for rel in phr.YESNO_SAME
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
        template = _pick(rng, phr.YESNO_SAME[relation])
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
            template = _pick(rng, phr.YESNO_BEFORE)
        else:
            answer = "yes" if va > vb else "no"
            template = _pick(rng, phr.YESNO_POPULATION)
        question = template.format(a=world.names[a], b=world.names[b],
                                   verb=phr.YEAR_VERBS.get(relation, ""))
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
    with gc_paused():
        return _make_questions(world, n, hops, seed)


def _make_questions(world: World, n: int, hops: int | None, seed: int) -> list[Example]:
    # Seeded without n, and drawn in the same order whatever n is: fewer questions are
    # always a prefix of more.
    rng = seeded_rng("questions", world.seed, world.size, hops, seed)
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

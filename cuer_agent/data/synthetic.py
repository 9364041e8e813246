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

**Passages.** Each entity has an article of 1-4 paragraphs, one `Passage(title=name,
text=..., index=paragraph number)` each: the first opens with an intro; every paragraph
states some of the entity's facts in varied forms (`_synthetic_text.FACTS`; the subject
is the name, a surname, "the film" or a pronoun), one or two fillers and sometimes a
sibling mention. **Redundancy**: each fact is stated in 1, 2 or 3 paragraphs of its
subject's article (`redundancy`: a fixed number, weights of 1, 2, 3, or the default
mix), each time in a sentence drawn on its own that contains the object verbatim;
`World.fact_passages` lists them. Most fact forms share a cue word (or a simple
morphological variant) with a question paraphrase of their relation.

**Counterfactual passages.** `World.counterfactual_value` gives another value of a fact
(a family sibling's, or a shifted number, or another entity of the type) and
`World.counterfactual_paragraph` the paragraph the same generator writes with it — how
the faults put a stale or conflicting passage into the world
(`cuer_agent.interventions.facts`) without a template sentence.

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

**Measured** (asserted in tests/test_synthetic.py): with the whole question as a BM25
query over the whole corpus, the hop-1 support is in the top 5 for most questions and the
last hop's for few; no question contains its answer, and no multi-hop chain names its
last-hop support. The default size (2,000 entities, about 5,600 paragraphs) builds in
0.2 s.
"""

from __future__ import annotations

import functools
from typing import Any

from cuer_agent.data._example import Dataset
from cuer_agent.data._loaders import register_dataset
from cuer_agent.data._synthetic_build import build_world
from cuer_agent.data._synthetic_questions import make_questions
from cuer_agent.data._synthetic_world import (
    ENTITY_RELATIONS,
    LITERALS,
    REDUNDANCY_MIX,
    TYPES,
    Redundancy,
    World,
    check_redundancy,
)

__all__ = ["ENTITY_RELATIONS", "LITERALS", "REDUNDANCY_MIX", "TYPES", "Redundancy", "World",
           "build_world", "check_redundancy", "default_size", "load_synthetic",
           "make_questions", "redundancy_label", "world_of"]


def default_size(n: int) -> int:
    """World size used by `load_synthetic` when none is given: ten passages per question,
    at least 2,000."""
    return max(2000, 10 * n)


def redundancy_label(redundancy: Redundancy) -> str:
    """How a redundancy reads in a source string: "2", "mix", or its weights."""
    if isinstance(redundancy, int):
        return str(redundancy)
    if tuple(redundancy) == REDUNDANCY_MIX:
        return "mix"
    return "/".join(f"{w:g}" for w in redundancy)


@functools.lru_cache(maxsize=4)
def world_of(seed: int, size: int, redundancy: Redundancy = REDUNDANCY_MIX) -> World:
    """The world of (seed, size, redundancy), built once per process: the loader and the
    faults (`cuer_agent.interventions.facts`) read the same one."""
    return build_world(seed=seed, size=size, redundancy=redundancy)


def load_synthetic(n: int = 200, *, hops: int | None = None, seed: int = 0,
                   size: int | None = None,
                   redundancy: Redundancy | str | None = None) -> Dataset:
    """The synthetic data set: `n` questions over a world of `size` entities; its corpus
    is every paragraph of their articles. `redundancy`: in how many passages each fact
    is stated (1-3, weights of 1, 2, 3, or "mix" = the default)."""
    size = default_size(n) if size is None else size
    redundancy = (REDUNDANCY_MIX if redundancy in (None, "mix")
                  else check_redundancy(redundancy))
    world = world_of(seed, size, redundancy)
    examples = make_questions(world, n, hops=hops, seed=seed)
    label = redundancy_label(redundancy)
    return Dataset(name="synthetic", examples=examples, corpus=world.passages,
                   source=f"synthetic:seed={seed},size={size},hops={hops},redundancy={label}",
                   info={"seed": seed, "size": size, "hops": hops, "n": n,
                         "redundancy": redundancy})


@register_dataset("synthetic", help="a generated world, no --path", generated=True)
def load_generated(path: None = None, **options: Any) -> Dataset:
    """The registry's loader of the synthetic world: `load_synthetic(**options)` (looked
    up when called, so a test may replace it); a generated world has no path."""
    return load_synthetic(**options)

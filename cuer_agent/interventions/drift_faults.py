"""Query drift as agents drift: hop h's sub-query asks about the wrong thing in one of
the ways a planner goes wrong, each a fault of its own (so each has its own recovery,
diagnoser and invisibility figures). `query_drift` (`structural_faults`) is the fourth:
the sub-query's entity becomes an off-topic passage's title.

| name | what hop h's sub-query asks instead |
|---|---|
| `bridge_dropped` | about the question's own entity: the bridge the earlier hops found is dropped |
| `entity_swap` | about another entity in hop h's own evidence (a look-alike name first) |
| `relation_swap` | about the right entity, with the frame of another hop's sub-query |

All three are stage `tool`, boundary `plan`: the fork replaces the clean sub-query and
the agent re-executes from there. They read only what the agent observed (the question,
hop h's sub-query and evidence, the later hops' sub-queries) and, for `entity_swap`, the
hop's gold fact, so the swapped-in entity is not the one the fact is about. Each new
sub-query is made of the run's own words: nothing is written that the run did not show.

**Skips** (`record.skipped`): ``"no entity in the sub-query"`` (all three) when the
sub-query has no entity or topic span; ``"no bridge to drop"`` at hop 1, or when the
sub-query already asks about the question's entity; ``"no other entity in view"``;
``"no other relation asked"`` when no later hop asks another frame of question.

Randomness: ``seeded_rng(seed, example_id, hop, name)``, as every fault.
"""

from __future__ import annotations

from cuer_agent.interventions._fault_types import FaultInput, FaultOutcome, fault
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.interventions._text import Span, content_words, topic
from cuer_agent.interventions.structural_faults import drifted_outcome, skip

__all__ = ["SKIP_NO_BRIDGE", "SKIP_NO_ENTITY", "SKIP_NO_OTHER_ENTITY", "SKIP_NO_OTHER_RELATION",
           "bridge_dropped", "entity_swap", "relation_swap"]

SKIP_NO_ENTITY = "no entity in the sub-query"
SKIP_NO_BRIDGE = "no bridge to drop"
SKIP_NO_OTHER_ENTITY = "no other entity in view"
SKIP_NO_OTHER_RELATION = "no other relation asked"


def _same(a: str, b: str) -> bool:
    return content_words(a) == content_words(b)


def _swap(subquery: str, span: Span, text: str) -> str:
    return subquery[:span.start] + text + subquery[span.end:]


@fault("bridge_dropped", stage="tool", boundary="plan",
       help="hop h's sub-query re-asks about the question's entity")
def bridge_dropped(inp: FaultInput) -> FaultOutcome:
    """Hop h (> 1) asks about the question's entity instead of the bridge the earlier hops
    found: the sub-query's entity becomes the question's."""
    name = "bridge_dropped"
    span, _ = topic(inp.subquery)
    if span is None:
        return skip(inp, name, SKIP_NO_ENTITY)
    asked, _ = topic(inp.question)
    if inp.hop == 1 or asked is None or _same(asked.text, span.text):
        return skip(inp, name, SKIP_NO_BRIDGE)
    return drifted_outcome(inp, name, span.text, _swap(inp.subquery, span, asked.text),
                           asked.text)


@fault("entity_swap", stage="tool", boundary="plan",
       help="hop h's sub-query asks about another entity in its own evidence")
def entity_swap(inp: FaultInput) -> FaultOutcome:
    """Hop h asks about another entity its own evidence shows: a look-alike (a title that
    shares a word with the sub-query's entity) when there is one, else any other title in
    view. Never a title of a passage stating the hop's fact."""
    name = "entity_swap"
    span, _ = topic(inp.subquery)
    if span is None:
        return skip(inp, name, SKIP_NO_ENTITY)
    stating = set(inp.fact.passage_ids) if inp.fact is not None else set()
    fact_titles = {ev.title for ev in inp.evidence if ev.id in stating}
    others = list(dict.fromkeys(
        " ".join(ev.title.split()) for ev in inp.evidence
        if ev.title not in fact_titles and not _same(ev.title, span.text)
        and content_words(ev.title)))
    if not others:
        return skip(inp, name, SKIP_NO_OTHER_ENTITY)
    words = content_words(span.text)
    alike = [title for title in others if words & content_words(title)]
    pool, likeness = (alike, "look-alike") if alike else (others, "in view")
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    title = pool[int(rng.integers(len(pool)))]
    return drifted_outcome(inp, name, span.text, _swap(inp.subquery, span, title), title,
                           likeness=likeness, candidates=len(pool))


@fault("relation_swap", stage="tool", boundary="plan",
       help="hop h's sub-query asks another relation of the right entity")
def relation_swap(inp: FaultInput) -> FaultOutcome:
    """Hop h asks about the right entity, but in the frame of a later hop's sub-query (the
    relation that hop asks): that sub-query with its entity replaced by hop h's."""
    name = "relation_swap"
    span, _ = topic(inp.subquery)
    if span is None:
        return skip(inp, name, SKIP_NO_ENTITY)
    asked = content_words(inp.subquery) - content_words(span.text)
    frames = []
    for later in inp.later_subqueries:
        other, _ = topic(later)
        if other is None:
            continue
        frame = _swap(later, other, span.text)
        if content_words(frame) - content_words(span.text) not in (asked, set()):
            frames.append(frame)
    frames = list(dict.fromkeys(frames))
    if not frames:
        return skip(inp, name, SKIP_NO_OTHER_RELATION)
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    frame = frames[int(rng.integers(len(frames)))]
    return drifted_outcome(inp, name, span.text, frame, span.text, frames=len(frames))

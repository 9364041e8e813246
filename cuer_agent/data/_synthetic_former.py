"""The clean world's own disagreement: outdated entries, stated as outdated.

A real encyclopedia states what changed: a company's former headquarters with the year
it moved, a book's first publisher, a city's population at an earlier census. So the
synthetic world does too: some facts that can change get, beside their current
statement, one sentence stating a former value as former ("until 1987", "at the 1961
census", "originally"). Two values for one relation are then not by themselves a fault:
an agent or a check has to read which one is current.

Which facts: those of `FORMER_FACTS` (company headquarters, book publisher, city and
country population), each with probability `FORMER_P`, decided by a dice of its own
(seeded apart) so the rest of every article is the same text it was without them. The
former value is drawn as the world draws that kind of value: another entity of the
object's type, or a smaller population (populations grow); its year is a plausible one
for the entity (after a company's founding, a book's publication year, a census year).
The sentence goes into one of the paragraphs that state the current value, at a random
place after the intro. A counterfactual paragraph (`World.counterfactual_paragraph`)
gets its former sentences by the same rule, so an injected paragraph does not lack
what real ones have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cuer_agent.data import _synthetic_text as txt

FORMER_P = 0.3
"""Share of the changeable facts that also state a former value."""

FORMER_FACTS: dict[str, tuple[str, ...]] = {
    "headquartered_in": ("Until {y}, {sp} headquarters were in {f}.",
                         "{s} moved its headquarters from {f} in {y}.",
                         "{s} was based in {f} until {y}."),
    "published_by": ("{s} was originally published by {f} in {y}.",
                     "The first edition, of {y}, came out with {f}."),
    "population": ("At the {y} census {s} had {f} inhabitants.",
                   "In {y}, {sp} population was {f}.",
                   "{s} counted {f} residents in {y}."),
}
"""Sentences stating a former value `{f}` with its year `{y}` (the subject as in
`_synthetic_text.FACTS`)."""

CENSUS_YEARS = (1950, 2011)
"""Census years of a former population (half-open)."""


SENTENCE_END = re.compile(r"(?<=[.!?]) (?=[A-Z0-9])")
"""Between two sentences of a generated paragraph (every sentence opens capitalised)."""


def _sentences(paragraph: str) -> list[str]:
    return SENTENCE_END.split(paragraph)


def former_value(dice: txt.Dice, relation: str, current: str, others: Sequence[str]) -> str:
    """A former value of a fact: another of `others` (the names of the object's type) for
    an entity relation, a smaller population (55-95 % of today's) for a population."""
    if relation == "population":
        today = int(current.replace(",", ""))
        return f"{int(today * (0.55 + 0.4 * dice.random())):,}"
    pool = [name for name in others if name != current]
    return dice.pick(pool)


def former_year(dice: txt.Dice, relation: str, facts: Sequence[txt.Fact]) -> str:
    """When the former value held: a census year; the book's publication year; a year
    5-40 after the company's founding."""
    literal = {rel: value for rel, value, _ in facts}
    if relation == "published_by" and "publication_year" in literal:
        return literal["publication_year"]
    if relation == "headquartered_in" and "founding_year" in literal:
        return str(min(2020, int(literal["founding_year"]) + 5 + dice.index(36)))
    return str(CENSUS_YEARS[0] + dice.index(CENSUS_YEARS[1] - CENSUS_YEARS[0]))


def add_former(dice: txt.Dice, paragraphs: list[str], facts: Sequence[txt.Fact],
               placement: Sequence[tuple[int, ...]], refs: tuple[txt.Ref, ...], name: str,
               others_of: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Add a former-value sentence to `paragraphs` (in place) for each changeable fact
    the dice chooses; returns relation → the former value stated. `others_of[relation]`:
    the names a former object may be."""
    stated: dict[str, str] = {}
    name_ref: txt.Ref = (name, txt.possessive(name), name)
    for (relation, current, _), where in zip(facts, placement, strict=True):
        if relation not in FORMER_FACTS or not where or not dice.chance(FORMER_P):
            continue
        value = former_value(dice, relation, current, others_of.get(relation, ()))
        fields = {"f": value, "y": former_year(dice, relation, facts)}
        ref = name_ref if dice.chance(txt.NAME_REF_P) else dice.pick(refs)
        fields["s"], fields["sp"], fields["so"] = ref
        text = dice.pick(FORMER_FACTS[relation]).format_map(fields)
        sentence = text[0].upper() + text[1:]
        j = dice.pick(where)
        body = _sentences(paragraphs[j])
        at = 1 + dice.index(len(body)) if j == 0 else dice.index(len(body) + 1)
        body.insert(at, sentence)
        paragraphs[j] = " ".join(body)
        stated[relation] = value
    return stated

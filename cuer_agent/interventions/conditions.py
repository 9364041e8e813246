"""Named evidence conditions: the registry the CUE-R study draws from.

A condition turns the evidence the system saw into the evidence it will see instead,
and says what it did in an `InterventionRecord`. A new condition is one function plus
one `@condition("name")` line. Built in:

| name | what it does |
|---|---|
| `remove` | REMOVE the CUE-R target |
| `replace` | REPLACE it (hardness from `params["hardness"]`, default medium) |
| `duplicate` | DUPLICATE it (position from `params["position"]`, default end) |
| `zero_retrieval` | no evidence at all (control) |
| `random_target` | REMOVE a uniformly random item (selection-bias control) |
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from cuer_agent._registry import Registry
from cuer_agent.interventions import operators as ops
from cuer_agent.interventions._placement import Taken, by_score, mint_id, scored
from cuer_agent.interventions._record import InterventionRecord, seeded_rng
from cuer_agent.interventions.targets import Target, random_target, select_target
from cuer_agent.trace import Evidence


class ConditionParams(TypedDict, total=False):
    """A condition's parameters (`cuer_agent.config.CuerConfig.conditions`)."""

    hardness: ops.Hardness
    """replace: how hard the replacement is to tell from the target."""
    position: ops.Position
    """duplicate: where the copy goes."""
    which: int | Literal["both"]
    """remove_support: the gold support removed (0, 1) or both."""


@dataclass(frozen=True)
class ConditionInput:
    """Everything a condition may use. `gold_titles` is a hidden label: the experimenter
    uses it to pick targets and replacements; the system never sees it."""

    example_id: str
    question: str
    evidence: Sequence[Evidence]
    used_ids: Collection[str]
    gold_titles: Collection[str]
    pool: ops.ReplacementPool | None
    seed: int
    hop: int = 1
    params: ConditionParams = field(default_factory=lambda: ConditionParams())
    score: Callable[[str, str, str], float] | None = None
    """The retriever's score for (query, title, text). Given (per-hop operators), a
    replacement takes the place its own score gives it for `question` (what the
    retriever would do), instead of the target's place and score (CUE-R's single-shot
    REPLACE)."""


Outcome = tuple[list[Evidence] | None, InterventionRecord]
Condition = Callable[[ConditionInput, str], Outcome]
CONDITIONS: Registry[Condition] = Registry("condition", "cuer_agent.conditions")
"""The built-in conditions are defined below, in this module."""


def condition(name: str) -> Callable[[Condition], Condition]:
    """Decorator: register a condition `(ConditionInput, name) -> (evidence, record)`."""
    return CONDITIONS.register(name)


def get_condition(name: str) -> Condition:
    return CONDITIONS.get(name)


def condition_names() -> list[str]:
    return CONDITIONS.names()


def _record(inp: ConditionInput, name: str, operator: str, targets: Sequence[Target] = (),
            **extra: Any) -> InterventionRecord:
    return InterventionRecord(
        record_id=f"{inp.example_id}/{name}", example_id=inp.example_id, condition=name,
        operator=operator, hop=inp.hop, target_ids=tuple(t.id for t in targets),
        target_titles=tuple(t.title for t in targets),
        target_rule=",".join(t.rule for t in targets), **extra)


def _skip(inp: ConditionInput, name: str, operator: str, reason: str) -> Outcome:
    return None, _record(inp, name, operator, skipped=reason)


def _cuer_target(inp: ConditionInput, name: str) -> Target | None:
    return select_target(inp.evidence, inp.used_ids, inp.gold_titles)


def _random_target(inp: ConditionInput, name: str) -> Target | None:
    return random_target(inp.evidence, seeded_rng(inp.seed, inp.example_id, inp.hop, name))


def _on_target(operator: str,
               pick: Callable[[ConditionInput, str], Target | None] = _cuer_target,
               ) -> Callable[[Callable[[ConditionInput, str, Target], Outcome]], Condition]:
    """A condition on one target (`pick`: CUE-R's rule by default), skipped with "empty
    retrieval" when nothing is in view."""
    def deco(func: Callable[[ConditionInput, str, Target], Outcome]) -> Condition:
        @functools.wraps(func)
        def run(inp: ConditionInput, name: str) -> Outcome:
            target = pick(inp, name)
            if target is None:
                return _skip(inp, name, operator, "empty retrieval")
            return func(inp, name, target)
        return run
    return deco


@condition("remove")
@_on_target("REMOVE")
def remove(inp: ConditionInput, name: str, target: Target) -> Outcome:
    return ops.remove(inp.evidence, [target]), _record(inp, name, "REMOVE", [target])


@condition("replace")
@_on_target("REPLACE")
def replace(inp: ConditionInput, name: str, target: Target) -> Outcome:
    hardness = inp.params.get("hardness", "medium")
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    new = inp.pool.pick(hardness, inp.evidence, target, inp.question, rng) if inp.pool else None
    if new is None:
        return _skip(inp, name, "REPLACE", "no non-supporting item for REPLACE")
    if inp.score is not None:
        edited = by_score([*ops.remove(inp.evidence, [target]),
                           scored(inp.question, new, inp.score)])
    else:
        edited = ops.replace(inp.evidence, target, new)
    return edited, _record(
        inp, name, "REPLACE", [target], new_ids=(new.id,),
        provenance={new.id: new.id},
        params={"hardness": hardness, "placed": "by score" if inp.score else "in place"})


@condition("duplicate")
@_on_target("DUPLICATE")
def duplicate(inp: ConditionInput, name: str, target: Target) -> Outcome:
    position = inp.params.get("position", "end")
    rng = seeded_rng(inp.seed, inp.example_id, inp.hop, name)
    taken = {ev.id for ev in inp.evidence}
    if inp.pool is not None:
        index = inp.pool.retriever
        new_id = mint_id(target.title, Taken(taken, index.ids), index.max_paragraph, rng)
    else:
        new_id = mint_id(target.title, taken, 0, rng)
    edited, copy = ops.duplicate(inp.evidence, target, position, new_id=new_id)
    return edited, _record(inp, name, "DUPLICATE", [target], new_ids=(copy.id,),
                           provenance={copy.id: target.id}, params={"position": position})


@condition("zero_retrieval")
def zero_retrieval(inp: ConditionInput, name: str) -> Outcome:
    return [], _record(inp, name, "EMPTY")


@condition("random_target")
@_on_target("REMOVE", pick=_random_target)
def random_target_removal(inp: ConditionInput, name: str, target: Target) -> Outcome:
    return ops.remove(inp.evidence, [target]), _record(inp, name, "REMOVE", [target])


@condition("remove_support")
def remove_support(inp: ConditionInput, name: str) -> Outcome:
    """Two-support ablation: REMOVE gold support 1, support 2, or both (`params["which"]`
    is 0, 1 or "both"); applies only when two distinct gold titles are in view."""
    firsts: dict[str, Target] = {}
    for index, ev in enumerate(inp.evidence):
        if ev.title in inp.gold_titles and ev.title not in firsts:
            firsts[ev.title] = Target(index, ev.id, ev.title, "gold")
    supports = list(firsts.values())
    if len(supports) < 2:
        return _skip(inp, name, "REMOVE", "fewer than two gold supports in view")
    which = inp.params.get("which", "both")
    chosen = supports[:2] if which == "both" else [supports[int(which)]]
    drop_titles = {t.title for t in chosen}
    # Every chunk of a removed support goes, so no part of it stays in view.
    targets = [Target(i, ev.id, ev.title, "gold") for i, ev in enumerate(inp.evidence)
               if ev.title in drop_titles]
    return ops.remove(inp.evidence, targets), _record(inp, name, "REMOVE", targets,
                                                      params={"which": which})

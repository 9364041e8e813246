"""Which evidence item an intervention perturbs.

CUE-R's rule (paper-notes §A), first that exists among the items in view:

1. used by the answer AND titled with a gold supporting title  (`used+gold`)
2. used by the answer                                        (`used`)
3. titled with a gold supporting title                       (`gold`)
4. the highest-ranked item                                   (`top`)

The rule prefers high-value items — the paper's acknowledged selection bias — so
`random_target` picks uniformly (seeded) as a control. Ties inside a rule go to the
better-ranked item.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Evidence = dict[str, Any]


@dataclass(frozen=True)
class Target:
    index: int
    """Position in the evidence list."""
    id: str
    title: str
    rule: str


def select_target(evidence: Sequence[Evidence], used_ids: Collection[str],
                  gold_titles: Collection[str]) -> Target | None:
    """The CUE-R target, or None when nothing is in view."""
    used, gold = set(used_ids), set(gold_titles)
    rules: tuple[tuple[str, Callable[[Evidence], bool]], ...] = (
             ("used+gold", lambda ev: ev["id"] in used and ev["title"] in gold),
             ("used", lambda ev: ev["id"] in used),
             ("gold", lambda ev: ev["title"] in gold),
             ("top", lambda ev: True))
    for rule, matches in rules:
        for index, ev in enumerate(evidence):
            if matches(ev):
                return Target(index, ev["id"], ev["title"], rule)
    return None


def random_target(evidence: Sequence[Evidence], rng: np.random.Generator) -> Target | None:
    """A uniformly random item in view (the selection-bias control)."""
    if not evidence:
        return None
    index = int(rng.integers(len(evidence)))
    return Target(index, evidence[index]["id"], evidence[index]["title"], "random")

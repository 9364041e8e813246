"""Repairs: actions an agent could have taken at hop j, for the counterfactual probes.

A fault is a state of the world the run met; a repair is something the *agent* could have
done differently at one hop. The probes (`frozen-hop`, `suffix-regen`) try the repairs an
agent allows, hop by hop, and blame the first hop whose repair makes the run right. On an
injected fault the repair is the fault's own (its tool made clean at hop j); on a natural
failure there is no fault to undo, so the repairs are these:

=============  ==========================================================  =============
repair         what changes at hop j                                        reads
=============  ==========================================================  =============
deeper         the same sub-query, more of the ranked list (k × 2)          observable
reread         the same evidence, the reader's next reading of it: the      observable
               rule reader's next-best span, another sample from a model
               (`ReadRequest.reading` = 1; the backend's `rereading` says
               how it is drawn, and it is part of the request's cache key)
replan         hop j's attempt is treated as failed: the agent's own         observable
               retry planner asks another sub-query (one more retry
               allowed at that hop)
gold-support   the gold step's supporting passage at rank 1, the ranked     gold oracle
               list after it (k − 1)
=============  ==========================================================  =============

`gold-support` is a declared **gold oracle** (as `coverage-gold` is): it puts in view the
passage the gold chain says hop j needed (the step the gold-chain walk left open there).

Each repair is a `Repair` in the `REPAIRS` registry (`repair`, `get_repair`,
`repair_names`; third-party repairs register under the entry-point group
``cuer_agent.repairs``). A repair acts through the run's tools (`RepairCondition`: the
`Condition` nodes already consult, clean at every other hop — for `reread`, the reading
it asks the read node for) or, for `replan`, by asking the executor to re-open hop j for
a retry. An agent declares the repairs it allows
(`AgentSpec.repairs`); a repair it cannot take is *not applicable*, with its reason
(`Repair.not_applicable`), never skipped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cuer_agent._registry import About, Registry
from cuer_agent.retrieval import Retriever
from cuer_agent.trace import Evidence

Reads = Literal["observable", "gold oracle"]
DEEPER_FACTOR = 2
"""`deeper` retrieves this many times the run's k at the repaired hop."""


@dataclass(frozen=True)
class RepairAbout(About):
    """What a repair declares: what it reads besides the run."""

    reads: Reads = "observable"


@dataclass(frozen=True)
class RepairCondition:
    """The run's tools with hop `hop` repaired (a `cuer_agent.agent_context.Condition`):
    at that hop the retriever returns `depth` × k items, after `front` (passages put at
    rank 1 and on), and the reader gives its `alternative`-th alternative reading; every
    other hop is the clean tool and the reader's own reading."""

    hop: int
    depth: int = 1
    front: tuple[Evidence, ...] = ()
    alternative: int = 0

    def issue(self, hop: int, attempt: int, planned: str) -> str:
        return planned

    def retrieve(self, retriever: Retriever, hop: int, query: str, k: int) -> list[Evidence]:
        if hop != self.hop:
            return list(retriever.retrieve(query, k))
        wanted = k * self.depth
        ranked = list(retriever.retrieve(query, wanted + len(self.front)))
        ids = {item.id for item in self.front}
        rest = [item for item in ranked if item.id not in ids]
        return [*self.front, *rest][:wanted]

    def hop_budget(self, budget: int) -> int:
        return budget

    def reading(self, hop: int) -> int:
        return self.alternative if hop == self.hop else 0

    def repaired(self, hop: int) -> RepairCondition:
        return self


@dataclass(frozen=True)
class Repair:
    """One repair: how it changes hop j (see the module docstring)."""

    name: str
    depth: int = 1
    """Multiplier of k at the repaired hop."""
    gold_support: bool = False
    """Put the gold step's supporting passage at rank 1 (a gold oracle)."""
    retry: bool = False
    """Re-open hop j for the agent's own retry planner (an executor edit, no tool change)."""
    alternative: int = 0
    """Ask the reader for this alternative reading of hop j's evidence (0: its own)."""

    def condition(self, hop: int, support: Sequence[Evidence] = ()) -> RepairCondition | None:
        """The tools with hop `hop` repaired (None: this repair changes no tool)."""
        if self.retry:
            return None
        return RepairCondition(hop, self.depth, tuple(support) if self.gold_support else (),
                               self.alternative)

    def not_applicable(self, *, allowed: Sequence[str], retries: bool,
                       support: Sequence[Evidence] | None, rereads: bool = True) -> str | None:
        """Why this repair cannot be taken at a hop (None: it can). `allowed`: the agent's
        declared repairs; `retries`: the agent has a retry planner; `support`: the gold
        passages for the hop (None: no gold chain for it); `rereads`: the run's backend
        offers alternative readings (`SkillClient.rereads`)."""
        if self.name not in allowed:
            return f"the agent does not allow {self.name!r} (it allows {', '.join(allowed)})"
        if self.retry and not retries:
            return "the agent has no retry planner (its spec names no retries key)"
        if self.alternative and not rereads:
            return "the backend offers no alternative readings (it defines no `rereading`)"
        if self.gold_support and not support:
            return "no gold supporting passage is known for this hop"
        return None


REPAIRS: Registry[Repair] = Registry("repair", "cuer_agent.repairs")
"""The built-in repairs are registered below, in this module."""


def repair(item: Repair, about: RepairAbout) -> Repair:
    """Register `item` under its name with what it declares."""
    return REPAIRS.add(item.name, item, about)


def get_repair(name: str) -> Repair:
    return REPAIRS.get(name)


def repair_names() -> list[str]:
    return REPAIRS.names()


def reads_gold(name: str) -> bool:
    """The repair puts gold in view (`RepairAbout.reads`)."""
    return REPAIRS.about(name, RepairAbout).reads == "gold oracle"


repair(Repair("deeper", depth=DEEPER_FACTOR),
       RepairAbout("the same sub-query, more of the ranked list"))
repair(Repair("reread", alternative=1),
       RepairAbout("the same evidence, the reader's next reading of it"))
repair(Repair("replan", retry=True),
       RepairAbout("another sub-query from the agent's own retry planner"))
repair(Repair("gold-support", gold_support=True),
       RepairAbout("the gold step's supporting passage at rank 1", reads="gold oracle"))

DEFAULT_REPAIRS = ("deeper", "reread", "replan", "gold-support")
"""The repairs an agent allows unless its spec says otherwise."""

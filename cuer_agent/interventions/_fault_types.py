"""Faults at hop h: the input a fault sees, what it returns, and the registry.

A fault is a pure function `(FaultInput) -> FaultOutcome`. It never runs the agent and
never modifies anything it is given: it returns what hop h meets at its boundary — for
the sub-query and the evidence hop h's first attempt had in the clean run — and, for a
retrieval fault, the change of the corpus that produces it (`FaultOutcome.corpus`, a
`cuer_agent.interventions.corpus.CorpusEdit`). The study makes that a state of the world
the agent searches (persistence `corpus`, the default), or a condition of the tools keyed
to the sub-query or the hop (`cuer_agent.interventions.persistence`), and lets the same
agent re-execute the suffix; with persistence `once` the outcome is a one-shot edit of
the saved state.

* boundary `retrieve`: edits hop h's evidence (`FaultOutcome.evidence`) — empty,
  irrelevant, conflicting and stale evidence, content tampering;
* boundary `plan`: edits hop h's sub-query (`FaultOutcome.subquery`), then retrieval
  runs on it — query drift;
* boundary `read` (of hop h−1): only the decision, answer now
  (`FaultOutcome.force_answer`) — early termination.

A new fault is one function plus one `@fault(name, stage=..., boundary=...)` line.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from cuer_agent._registry import Registry, SelectableAbout
from cuer_agent.interventions._placement import by_score, place, scored
from cuer_agent.interventions._record import InterventionRecord
from cuer_agent.interventions.corpus import CorpusEdit
from cuer_agent.interventions.facts import Fact, FactSource
from cuer_agent.trace import Evidence

Stage = Literal["retrieval", "tool", "answer"]
Boundary = Literal["plan", "retrieve", "read"]


@dataclass(frozen=True)
class CorpusItem:
    """A passage chunk a fault may draw from (off-topic passages, distractors)."""

    id: str
    title: str
    text: str


class FaultOverrides(TypedDict, total=False):
    """Overrides of a fault's rules (`FaultInput.params`); content tampering reads these
    (`cuer_agent.interventions.tampering`: its module docstring)."""

    strategies: Sequence[str]
    min_answer_chars: int
    min_salient_caps: int
    year_range: tuple[int, int]
    year_shifts: Sequence[int]
    small_int_limit: int
    small_int_shifts: Sequence[int]
    scale_factors: Sequence[float]
    fallback_names: Sequence[str]


@dataclass(frozen=True)
class FaultInput:
    """What the injector knows at hop h. `gold_*` and `distractor_answers` are hidden
    labels: the experimenter uses them to certify a fault; the agent never sees them."""

    example_id: str
    question: str
    hop: int
    subquery: str
    """Hop h's sub-query in the clean run."""
    evidence: Sequence[Evidence]
    """Hop h's retrieved evidence in the clean run (in view order)."""
    later_subqueries: Sequence[str]
    """Sub-queries of hops > h in the clean run (observable), for bridge detection."""
    corpus: Sequence[CorpusItem]
    """Passages the fault may draw from: the example's pool or the shared corpus."""
    seed: int
    gold_answers: Sequence[str] = ()
    distractor_answers: Sequence[str] = ()
    """Gold answers of *other* examples: entity distractors for tampering."""
    params: FaultOverrides = field(default_factory=lambda: FaultOverrides())
    score: Callable[[str, str, str], float] | None = None
    """The retriever's score for (query, title, text): injected and edited items are
    scored as the retriever scores what it returns (`_placement`)."""
    search: Callable[[str, int], list[Evidence]] | None = None
    """The retriever itself, (query, k) -> its evidence: for faults that draw passages."""
    known_ids: Collection[str] = ()
    """Every indexed chunk id: a new item's real-form id collides with none of them."""
    max_paragraph: int = 0
    """The largest paragraph index of the corpus (new ids draw theirs from that range)."""
    k: int | None = None
    """Items the retriever returns per query: an injected item pushes one out when full."""
    finding: str = ""
    """Hop h's finding in the clean run (observable): the fact the hop used."""
    selected: Sequence[str] = ()
    """Ids hop h selected in the clean run (observable)."""
    fact: Fact | None = None
    """Hop h's gold fact (hidden label): the passages that state it."""
    facts: FactSource | None = None
    """How the data set's world writes a fact otherwise (counterfactual passages)."""


@dataclass(frozen=True)
class FaultOutcome:
    record: InterventionRecord
    evidence: list[Evidence] | None = None
    """Hop h's evidence under the fault (for the sub-query it was computed for)."""
    subquery: str | None = None
    force_answer: bool = False
    corpus: CorpusEdit | None = None
    """A retrieval fault's change of the corpus (persistence `corpus`)."""

    @property
    def applied(self) -> bool:
        return not self.record.skipped


@dataclass(frozen=True)
class FaultSpec:
    name: str
    stage: Stage
    boundary: Boundary
    apply: Callable[[FaultInput], FaultOutcome]


FAULTS: Registry[FaultSpec] = Registry(
    "fault", "cuer_agent.faults",
    builtins=("cuer_agent.interventions.structural_faults",
              "cuer_agent.interventions.drift_faults",
              "cuer_agent.interventions.misleading_faults", "cuer_agent.interventions.tampering"))


def fault(name: str, *, stage: Stage, boundary: Boundary, help: str = "",
          default_rank: int | None = None
          ) -> Callable[[Callable[[FaultInput], FaultOutcome]],
                        Callable[[FaultInput], FaultOutcome]]:
    """Register a fault under `name` with its stage label and fork boundary, its help
    text, and its place in the default selection (`SelectableAbout.default_rank`; None:
    injected only when named)."""
    def deco(func: Callable[[FaultInput], FaultOutcome]) -> Callable[[FaultInput], FaultOutcome]:
        FAULTS.add(name, FaultSpec(name, stage, boundary, func),
                   SelectableAbout(help=help, default_rank=default_rank))
        return func
    return deco


def default_faults() -> tuple[str, ...]:
    """The faults a study injects when none are named, in their declared order."""
    return FAULTS.default_selection()


def fault_help() -> str:
    """The registered faults with what each is, for help texts."""
    return FAULTS.choices(SelectableAbout)


def get_fault(name: str) -> FaultSpec:
    return FAULTS.get(name)


def fault_names() -> list[str]:
    return FAULTS.names()


def view_of(inp: FaultInput, corpus: CorpusEdit) -> list[Evidence]:
    """Hop h's evidence from the edited corpus: what the retriever returns for the
    sub-query there. Without a retriever: the clean evidence, minus what is withheld, with
    edited texts (rescored when a scorer is given) and added passages placed by score."""
    k = inp.k if inp.k is not None else len(inp.evidence)
    if inp.search is not None:
        return corpus.view(inp.search, inp.score, inp.subquery, k)
    items = []
    for ev in inp.evidence:
        if ev.id in corpus.withheld:
            continue
        edited = corpus.edited.get(ev.id)
        items.append(scored(inp.subquery, ev.model_copy(update={"text": edited.text}), inp.score)
                     if edited is not None else ev)
    for item in corpus.added:
        items = place(items, item.model_copy(update={"rank": 0, "score": 0.0}), inp.subquery,
                      inp.score, k)
    return by_score(items) if inp.score is not None else items


class FactParams(TypedDict, total=False):
    """What a record says of the faulted fact (nothing without one)."""

    fact_title: str
    redundancy: int


def fact_params(inp: FaultInput) -> FactParams:
    """What a record says of the faulted fact: its subject and redundancy."""
    if inp.fact is None:
        return {}
    return {"fact_title": inp.fact.title, "redundancy": inp.fact.redundancy}


def fault_record(inp: FaultInput, name: str, *, skipped: str = "",
                 **fields: Any) -> InterventionRecord:
    """The record every fault returns: `<example>/<fault>@<hop>`."""
    spec = FAULTS.get(name)
    return InterventionRecord(record_id=f"{inp.example_id}/{name}@{inp.hop}",
                              example_id=inp.example_id, condition=name, operator=name.upper(),
                              hop=inp.hop, skipped=skipped,
                              params={"stage": spec.stage, "boundary": spec.boundary,
                                      **fields.pop("params", {})},
                              **fields)

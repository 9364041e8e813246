"""The diagnoser protocol, the view it gets, the probe, and the registry.

A diagnoser names where a failed run's failure started: `diagnose(view, probe) ->
Diagnosis(hop, stage, propagated, severity, cause, cost)`. Hop conventions (paper-notes
§B): 1..n = a hop of the trace, 0 = answer level, n+1 = the agent stopped too early.

* `view` holds only the observable trace and the hop budget the agent was configured
  with (what its user set, not what a fault may have lowered it to) — plus the gold
  answer for diagnosers that declare `uses_gold = True` (and only those).
* `probe` is given only to diagnosers that declare `probing = True`: re-execution of the
  same agent from the observed run, and a correctness oracle, under a call budget; it
  counts what it spends. The oracle compares with the gold answer: a diagnoser that asks
  it declares `uses_gold_oracle = True` (the report shows it, and the conformance kit
  relabels the oracle as well as the view). A probe that re-executes a hop with a clean
  tool (`rerun_hop`, `regenerate_from`, `continue_retrieving`: the repaired hop meets no
  fault) knows where the fault is in a way no deployed user does: such a diagnoser
  declares `uses_environment_oracle = True` (the kit checks it).

Registration: `@diagnoser("name")` on a class, or a third-party entry point in the
`cuer_agent.diagnosers` group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol, TypedDict, Unpack, runtime_checkable

from cuer_agent._registry import Registry, SelectableAbout
from cuer_agent.llm.backends import SkillClient, backend_about
from cuer_agent.trace import HopRecord, Trace


class DiagnoserOptions(TypedDict, total=False):
    """What a diagnoser may be built with (`get_diagnoser(name, **options)`); each reads
    the ones it needs."""

    skills: SkillClient
    """The model a model-based diagnoser (or a probe's re-run) asks."""
    budget: int
    """Probes: hops probed at most."""
    min_confidence: float
    """Gold-free probes: the repaired run's confidence that counts as fixed."""
    hop_threshold: float
    drift_threshold: float
    threshold: float

Stage = Literal["retrieval", "tool", "answer", "none"]
STAGES: tuple[str, ...] = ("retrieval", "tool", "answer", "none")
ENTRY_POINT_GROUP = "cuer_agent.diagnosers"


@dataclass(frozen=True)
class DiagnosisCost:
    calls: int = 0
    """Skill calls the diagnosis spent (judge calls, probe re-executions)."""
    tokens: int = 0
    probes: int = 0
    """Probe operations used (re-executions), against the budget."""


@dataclass(frozen=True)
class Diagnosis:
    hop: int
    stage: Stage
    propagated: bool = False
    """The failure started before the last hop and carried on."""
    severity: float = 1.0
    cause: str = ""
    cost: DiagnosisCost = DiagnosisCost()
    repair: str | None = None
    """A probe's: the repair (`cuer_agent.interventions.repairs`) that fixed hop `hop`
    of a natural failure."""

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {self.stage!r}")
        if self.hop < 0:
            raise ValueError(f"hop must be >= 0, got {self.hop}")
        if not 0.0 <= self.severity <= 1.0:
            raise ValueError(f"severity must be in [0, 1], got {self.severity}")


@dataclass(frozen=True)
class DiagnosisView:
    """What a diagnoser may see: the observable trace (and, if declared, the gold answer)."""

    trace: Trace
    gold_answer: str | None = None
    seed: int = 0
    hop_budget: int | None = None
    """The hop budget the agent was configured with (None: unknown, e.g. foreign traces)."""

    def stable_seed(self, *parts: object) -> int:
        """A seed from the view's content — never Python's `hash()`."""
        text = "\x1f".join([str(self.seed), self.trace.to_json(), *map(str, parts)])
        return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


class ProbeBudgetExceeded(RuntimeError):
    """A probing diagnoser asked for more re-executions than its budget allows."""


ENVIRONMENT_CALLS: tuple[str, ...] = ("rerun_hop", "regenerate_from", "continue_retrieving")
"""Probe operations that run a hop against a clean tool (an environment oracle)."""


@runtime_checkable
class Probe(Protocol):
    budget: int
    probes: int
    repairs: tuple[str, ...]
    """The repairs to try at each hop of a natural failure; () on an injected fault, whose
    repair is its own (the tool made clean at the hop)."""

    def rerun_hop(self, j: int, repair: str | None = None) -> HopRecord | None: ...

    def reanswer_with_hop(self, j: int, hop_record: HopRecord) -> Trace: ...

    def regenerate_from(self, j: int, repair: str | None = None) -> Trace: ...

    def not_applicable(self, repair: str, j: int) -> str | None: ...

    def continue_retrieving(self) -> Trace: ...

    def is_correct(self, answer: str) -> bool: ...


class Diagnoser(Protocol):
    name: ClassVar[str]
    uses_gold: ClassVar[bool]
    """Its view holds the gold answer."""
    uses_gold_oracle: ClassVar[bool]
    """Its probes decide "the repair fixes it" by comparing with the gold answer."""
    uses_environment_oracle: ClassVar[bool]
    """Its probes run a hop against a clean tool (`ENVIRONMENT_CALLS`)."""
    probing: ClassVar[bool]
    stand_in: ClassVar[str | None]
    """Set when the diagnoser is a rule-based stand-in for something else (reports say so)."""

    def diagnose(self, view: DiagnosisView, probe: Probe | None) -> Diagnosis: ...


def make_view(diagnoser: Diagnoser, trace: Trace, gold: str, seed: int = 0,
              hop_budget: int | None = None) -> DiagnosisView:
    """The view a diagnoser is entitled to: gold only when it declares it uses gold."""
    return DiagnosisView(trace=trace, gold_answer=gold if diagnoser.uses_gold else None,
                         seed=seed, hop_budget=hop_budget)


@dataclass
class BaseDiagnoser:
    """Defaults for the class attributes; subclasses set what differs."""

    name: ClassVar[str] = ""
    uses_gold: ClassVar[bool] = False
    uses_gold_oracle: ClassVar[bool] = False
    uses_environment_oracle: ClassVar[bool] = False
    probing: ClassVar[bool] = False
    repairs_natural_failures: ClassVar[bool] = False
    """A probe that can repair a natural failure with the agent's repairs
    (`Probe.repairs`), not only undo an injected fault."""
    stand_in: ClassVar[str | None] = None
    control: ClassVar[bool] = False
    """A control: what any trace would score (chance, a fixed hop, the trace's own flags),
    set beside the diagnosers so a figure that needs no diagnosis shows as such."""
    options: DiagnoserOptions = field(default_factory=lambda: DiagnoserOptions())

    def rule_based_backend(self) -> str | None:
        """The name of the backend its skills run on when that backend is a rule-based
        stand-in, not a model (`BackendAbout.rule_based`): such a diagnoser is a stand-in
        for the method it is named after. None: no skills, or a model."""
        backend = getattr(self.options.get("skills"), "backend", None)
        if backend is None:  # no skills, or a skill callable that wraps no backend
            return None
        name: str = backend.name
        return name if backend_about(name).rule_based else None


DIAGNOSERS: Registry[Callable[..., Diagnoser]] = Registry(
    "diagnoser", ENTRY_POINT_GROUP, package="cuer_agent.diagnosers")
"""Built-ins: every public module of this package."""


def diagnoser(name: str, *, help: str = "", default_rank: int | None = None
              ) -> Callable[[type], type]:
    """Class decorator: register a diagnoser under `name`, with its help text and its
    place in the default selection (`SelectableAbout.default_rank`; None: run only when
    named). What it reads (gold, oracles, probes) its class declares."""
    def deco(cls: type) -> type:
        cls.name = name  # type: ignore[attr-defined]
        DIAGNOSERS.add(name, cls, SelectableAbout(help=help, default_rank=default_rank))
        return cls
    return deco


def diagnoser_names() -> list[str]:
    return DIAGNOSERS.names()


def default_diagnosers() -> tuple[str, ...]:
    """The diagnosers a study runs when none are named, in their declared order."""
    return DIAGNOSERS.default_selection()


def diagnoser_help() -> str:
    """The registered diagnosers with what each is, for help texts."""
    return DIAGNOSERS.choices(SelectableAbout)


def get_diagnoser(name: str, **options: Unpack[DiagnoserOptions]) -> Diagnoser:
    made = DIAGNOSERS.get(name)(options=options)
    if getattr(made, "name", "") != name:  # entry-point classes may not set it themselves
        made.name = name  # type: ignore[misc]
    return made

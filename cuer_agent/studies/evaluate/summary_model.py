"""The parts of `summary.json` of `evaluate` that no other study has: the reader check,
the single-shot/agentic comparison, the ledger and provenance. Conventions:
`cuer_agent.studies._common.summary_model`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Tag

from cuer_agent._part import Part, absent
from cuer_agent.config import StudyConfig
from cuer_agent.provenance import Provenance
from cuer_agent.studies._common.summary_model import HopKey, Interval, Ledger, SkillSpend
from cuer_agent.studies.cuer.summary_model import CuerSummary
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.natural.summary import NaturalSummary
from cuer_agent.studies.propagation.summary_model import (
    Invisibility,
    PropagationResults,
    VerifyRates,
)

# ------------------------------------------------------------------------- reader check

class Accuracy(Part):
    """A clean accuracy with its Wilson interval."""

    accuracy: float | None
    ci: Interval | None


class ReaderCheck(Accuracy):
    """The reader the agent ran with (`cuer_agent.studies.evaluate.reader_check`): its clean
    accuracy (the agentic clean runs), and without its relation table."""

    backend: str
    model: str
    version: str
    """The backend's version (the rule reader: a hash of its rules and tables)."""
    n: int
    """Clean runs."""
    without_relation_table: Accuracy | None
    """The same agent and questions, the reader's relation table off (extractive only)."""
    relation_groups: int
    """Groups in the reader's word table (0 for a language model)."""
    relation_words: int
    """Words in it."""


# ---------------------------------------------------------------------------- comparison

class Removal(Part):
    """One REMOVE of one target item: CUE-R's in the single-shot run, or the agent's at a
    hop."""

    hop: int | None
    """The hop whose sub-question was asked, or at which the agent lost the item (null:
    the whole question)."""
    target: str
    """Title of the removed item."""
    delta: float
    """Δcorrectness against the run without the removal (> 0: the removal hurt; in the
    single-shot run, the item is flagged)."""


class ComparisonExample(Part):
    """One example: the single-shot flags next to the agent's critical hop."""

    example_id: str
    single_shot: list[Removal]
    """Each single-shot REMOVE of the example (per hop's sub-question, or the whole
    question)."""
    critical_hop: int | None
    """The hop whose REMOVE hurts the final answer most; null when none hurts, or when
    several hurt as much (`tied_hops`)."""
    tied_hops: list[int]
    """The hops whose REMOVE hurts most, when they tie (empty otherwise)."""
    critical_item: str | None
    """Title of the critical hop's target."""
    critical_delta: float | None
    """The largest Δcorrectness of a hop's REMOVE (null when none hurts)."""
    points_at_critical: bool | None
    """The single-shot analysis flags the critical hop's item."""


class Comparison(Part):
    """Single-shot CUE-R next to the agentic per-hop analysis (`comparison.py`)."""

    n: int
    """Examples both analyses have whose clean agentic run was right."""
    with_critical_hop: int
    """Examples with one critical hop (ties not counted)."""
    ties: int
    """Examples where several hops hurt most, as much."""
    points_at_critical: int
    """Examples whose single-shot analysis flags the critical hop's item."""
    points_at_critical_share: float | None
    """`points_at_critical / with_critical_hop`; null without a critical hop."""
    points_at_critical_ci: Interval | None
    """Wilson interval of the share."""
    independent_share: float | None
    """The share of all compared hops' items the single-shot analysis flags: what
    `points_at_critical_share` would be if flags ignored which hop is critical."""
    single_shot_flags: int
    """Items the single-shot analysis flags."""
    flags_recovered: int
    """Flags on items whose agentic REMOVE did not hurt (the agent recovered)."""
    flags_recovered_share: float | None
    """`flags_recovered / single_shot_flags`; null without flags."""
    critical_hops: dict[HopKey, int]
    """Critical hop → examples."""
    examples: list[ComparisonExample]
    """Per example, in id order."""


# ------------------------------------------------------------------------ evaluate extras

class EvaluateLedger(Ledger):
    """The studies' ledger (single-shot and agentic traces), plus the diagnosers'."""

    diagnoser_requests: int
    """Skill requests made by the diagnosers."""
    diagnoser_errors: int
    """Diagnoses that raised."""
    diagnoser_by_skill: dict[str, SkillSpend]
    """The diagnosers' requests per skill, over the injected-fault and the
    natural-failure diagnoses (`consistency`'s `check`, the judge's `judge`, a probe's
    re-executions)."""


class NoProvenance(Part):
    """`{}`: the study ran without recording its provenance (called from Python)."""


# ------------------------------------------------------------------- evaluate summary

class SingleShot(CuerSummary):
    """The single-shot CUE-R baseline of `evaluate`."""

    questions: Literal["per_hop", "whole"]
    """What the single-shot system was asked: each hop's sub-question, or the whole
    question."""


class Caveat(Part):
    """One caveat, said once."""

    text: str
    concerns: list[str]
    """The diagnosers or faults it is about."""
    impact: float
    """How far it moves a number of the headline table (0–1; 0: none of them)."""


class WorldDisagreement(Part):
    """The synthetic world's own disagreement (`cuer_agent.data._synthetic_former`): facts
    whose article also states a former value, as former, and the clean runs that asked
    one. Written only for a synthetic world."""

    former_stated: int
    """Facts whose article states a former value beside the current one."""
    changeable: int
    """Facts of the relations that can state one (headquarters, publisher, population)."""
    share: float
    """`former_stated / changeable`."""
    clean_runs: int
    asking_one: int
    """Clean runs whose question's gold chain asks a fact with a former value stated."""
    accuracy_asking_one: float | None
    """Accuracy of those clean runs; null without any."""
    accuracy_others: float | None
    """Accuracy of the other clean runs; null without any."""


class EvaluateResults(Part):
    """`summary.json` of `cuer-agent evaluate` but its caveats: what the caveats are
    drawn from (`cuer_agent.studies.evaluate.caveats`)."""

    single_shot: SingleShot
    agentic: PropagationResults
    verify: VerifyRates
    invisibility: Invisibility
    reader: ReaderCheck
    comparison: Comparison
    diagnosers: dict[str, DiagnoserSummary]
    """Diagnoser name → its summary."""
    natural: NaturalSummary
    """The clean runs that ended wrong, labelled from the gold chain, and the diagnosers
    scored on them (`cuer_agent.studies.natural`)."""
    ledger: EvaluateLedger
    config: StudyConfig
    """The whole study config (the run's `config.json`)."""
    disagreement: WorldDisagreement = absent()
    """The synthetic world's own disagreement, and the clean runs that met it."""
    provenance: Annotated[Annotated[Provenance, Tag("Provenance")]
                          | Annotated[NoProvenance, Tag("NoProvenance")],
                          Discriminator(lambda v: "NoProvenance"
                                        if isinstance(v, NoProvenance) or v == {}
                                        else "Provenance")]


class EvaluateSummary(EvaluateResults):
    """`summary.json` of `cuer-agent evaluate`; the report is built from it alone."""

    caveats: list[Caveat]
    """Caveats a reader needs before quoting a number, derived from the results, ranked
    by their impact on the headline table (`evaluate_notes`)."""

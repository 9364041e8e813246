"""The parts of `summary.json` of the agentic studies: fault propagation (`propagate`, and
`agentic` of `evaluate`), and the diagnosers, comparison and provenance of `evaluate`.
Conventions: `cuer_agent.experiments.summary_cells`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cuer_agent.experiments.summary_cells import (
    HopKey,
    Interval,
    Ledger,
    MeanCI,
    Part,
    absent,
)

# -------------------------------------------------------------------------- propagation


class CleanRuns(Part):
    """The clean (unfaulted) runs of the agent."""

    n: int
    """Clean runs (one per example)."""
    accuracy: float | None
    """Share answered correctly (recall-based); null without runs."""
    accuracy_ci: Interval | None
    """Its 95 % percentile bootstrap interval."""
    hops_used: dict[HopKey, int]
    """Hops taken → runs."""
    hops: int
    """Hops taken over all clean runs."""
    retried_hops: int
    """Of them, hops that were retried (VERIFY found them unsupported)."""


class FaultCell(Part):
    """One fault injected at one hop: did the agent recover?"""

    injected: int
    """Injections whose fork ended normally (no request error, no parse failure)."""
    recovered: int
    """Of them, correct after re-execution."""
    failed: int
    """`injected - recovered`."""
    recovery: float | None
    """recovery(h) = recovered / injected; null when nothing was injected."""
    ci: Interval | None
    """Wilson interval of `recovery`."""
    descriptive_only: bool
    """Fewer than 10 injections: the cell is descriptive only."""
    retried: int
    """Injected runs that retried hop h."""
    effective: int
    """Injections that changed hop h's observable state."""
    ineffective: int
    """Injections that did not (`injected - effective`)."""
    recovered_effective: int
    """Recovered runs among the effective injections."""
    recovery_effective: float | None
    """Recovery over the effective injections only; null without any."""
    errors: int
    """Forks that ended in a request error or a parse failure: neither recovered nor
    failed, counted apart."""
    forced: Literal[True] = absent()
    """Present on early termination: its "recovery" is the share of answers that survive
    a stop the agent did not choose."""


class TamperingCell(Part):
    """Content tampering at one hop: what the agent did with a certified corrupted span."""

    injected: int
    """Injections whose fork ended normally."""
    resisted: int
    """The answer stayed correct."""
    absorbed: int
    """Wrong, and the answer recalls the corrupted span (the agent took it up)."""
    derailed: int
    """Wrong otherwise."""
    contaminated: int
    """Runs whose later sub-queries carry the corrupted span (query contamination)."""
    strategies: dict[str, int]
    """Tampering strategy → injections."""


class TamperingCertification(Part):
    """Where a corrupted span could be certified."""

    eligible: int
    """Eligible hops (the clean run reached them)."""
    certified: int
    """Hops where a span was certified (and tampered with)."""
    certified_share: float | None
    """`certified / eligible`; null without eligible hops."""
    not_certified: dict[str, int]
    """Reason → hops that could not be certified."""


class HopOperatorCell(Part):
    """REMOVE, REPLACE or DUPLICATE of hop h's target inside the agent, against the clean
    run (Δ = U(clean) − U(counterfactual))."""

    n: int
    """Applied interventions whose fork ended normally."""
    delta_correctness: MeanCI
    """Δ correctness of the final answer."""
    delta_grounding: MeanCI
    """Δ grounding."""
    delta_confidence_error: MeanCI
    """Δ of the confidence utility −CE."""
    divergence: MeanCI
    """The multi-hop D (used ids across hops, answer, confidence, actions)."""
    divergence_cuer: float | None
    """The plain CUE-R D (final used ids, answer, confidence)."""


class PrefixCalls(Part):
    """Skill calls forks spent on the prefix they share with the clean run (must be 0)."""

    forks: int
    """Forks that reported it."""
    total: int
    """Prefix calls over all forks."""
    max: int
    """The most one fork made."""


class Transition(Part):
    """An edge of the stage-transition graph."""

    from_: str = Field(alias="from")
    """Hop state (`+<hops after the fault>:<support>/<same|changed>`) or "injected"."""
    to: str
    """The next hop state, or "answer:wrong"."""
    count: int
    """Traces taking this edge."""


class StageTransitions(Part):
    """How a failed injection shows downstream: a weighted graph of hop states."""

    traces: int
    """Injected runs that still failed."""
    edges: list[Transition]
    """The graph's edges, sorted."""


# ---------------------------------------------------------------------------- diagnosers

class DepthCell(Part):
    """A diagnoser at one injected depth (failed traces whose fault sat at hop d)."""

    n: int
    """Failed traces at this depth."""
    acc: float | None
    """Exact-hop accuracy."""
    ci: Interval | None
    """Its Wilson interval."""
    ci_clustered: Interval | None
    """Its bootstrap interval clustered by example."""
    descriptive_only: bool
    """Fewer traces than `diagnose.min_cell`."""
    faults: dict[str, int]
    """Fault → traces."""
    independence: float
    """Independence baseline P(pred = d): a diagnoser with the same blame histogram but
    blind to the truth."""
    beats_independence: bool
    """The lower end of `ci` lies above `independence`."""


class ProportionCI(MeanCI):
    """A share with its Wilson interval and a bootstrap interval clustered by example."""

    ci_clustered: Interval | None


class CostPerCorrect(Part):
    """Cost of one correct diagnosis."""

    calls: float | None
    """Skill calls per correct diagnosis; null without any."""
    tokens: float | None
    """Tokens per correct diagnosis."""


class FaultAccuracy(Part):
    """A diagnoser on one fault."""

    n: int
    """Failed traces of the fault."""
    acc: float | None
    """Exact-hop accuracy."""


class FaultDepthCell(Part):
    """A diagnoser on one fault at one depth."""

    acc: float | None
    """Exact-hop accuracy."""
    n: int
    """Failed traces."""
    ci: Interval
    """Wilson interval."""
    descriptive_only: bool
    """Fewer traces than `diagnose.min_cell`."""


class DiagnoserSummary(Part):
    """One diagnoser over the injected runs that still failed
    (`cuer_agent.metrics.attribution`, `cuer_agent.experiments.diagnose_summary`)."""

    n: int
    """Failed traces diagnosed."""
    errors: int
    """Diagnoses that raised."""
    error_rate: float | None
    """`errors / n`; null without diagnoses."""
    by_depth: dict[HopKey, DepthCell]
    """Injected depth → accuracy there."""
    exact_hop_acc: ProportionCI
    """Exact-hop accuracy overall."""
    stage_acc: MeanCI
    """Accuracy on the stage of the fault."""
    hop_tol_acc: MeanCI
    """Accuracy within one hop."""
    ancestor_hit: MeanCI
    """Share naming the right stage at the faulted hop or an earlier one."""
    mae: MeanCI
    """Mean absolute error in hops."""
    calls_per_diagnosis: float | None
    """Skill calls per diagnosis; null without diagnoses."""
    tokens_per_diagnosis: float | None
    """Tokens per diagnosis."""
    cost_per_correct: CostPerCorrect
    by_fault: dict[str, FaultAccuracy]
    """Fault → exact-hop accuracy over its failed traces."""
    by_fault_depth: dict[str, dict[HopKey, FaultDepthCell]]
    """Fault → injected depth → exact-hop accuracy."""
    uses_gold: bool
    """It reads the gold answer (declared)."""
    uses_gold_oracle: bool
    """Its probe decides that a repair fixes the run by comparing with the gold answer."""
    probing: bool
    """It re-executes the agent."""
    stand_in: str | None
    """What it stands in for, when it is a rule-based stand-in."""
    blame_hist: dict[HopKey, float]
    """For each hop, the share of its diagnoses on failed runs naming it."""
    independence: float | None
    """The independence baseline overall."""
    clean_n: int
    """Clean, correct, unfaulted runs it diagnosed."""
    clean_blame_rate: float | None
    """Share of those on which it names a hop (>= 1): there is none to find."""
    expected_acc_analytic: dict[str, float | None] = absent()
    """Chance only: the uniform picker's expected accuracy per depth, and `overall`."""


# ---------------------------------------------------------------------------- comparison

class SingleShotFlag(Part):
    """CUE-R's REMOVE of one target item in the single-shot run."""

    hop: int | None
    """The hop whose sub-question was asked (null: the whole question)."""
    target: str
    """Title of the removed item."""
    delta: float
    """Δcorrectness (> 0: the item is flagged)."""


class ComparisonExample(Part):
    """One example: the single-shot flags next to the agent's critical hop."""

    example_id: str
    single_shot: list[SingleShotFlag]
    """Each single-shot REMOVE of the example (per hop's sub-question, or the whole
    question)."""
    critical_hop: int | None
    """The hop whose REMOVE hurts the final answer most; null when none hurts."""
    critical_item: str | None
    """Title of its target."""
    critical_delta: float | None
    """Its Δcorrectness."""
    points_at_critical: bool | None
    """The single-shot analysis flags the critical hop's item."""


class Comparison(Part):
    """Single-shot CUE-R next to the agentic per-hop analysis (`comparison.py`)."""

    n: int
    """Examples both analyses have."""
    with_critical_hop: int
    """Examples with a critical hop."""
    ties: int
    """Examples where several hops hurt as much as the critical one."""
    points_at_critical: int
    """Examples whose single-shot analysis flags the critical hop's item."""
    points_at_critical_share: float | None
    """`points_at_critical / with_critical_hop`; null without a critical hop."""
    points_at_critical_ci: Interval | None
    """Wilson interval of the share."""
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


class Provenance(Part):
    """Where the summary came from (`cuer_agent.provenance`)."""

    command: str
    """The command, with only the options that can change the results."""
    version: str
    """The installed cuer-agent version."""
    commit: str | None
    """The git commit of the cuer-agent source (`+dirty` with tracked changes); null
    outside a git checkout."""
    data_sha256: str | None
    """sha256 of the data file, when the data came from one."""
    python: str
    """The Python version."""
    platform: str
    """The machine (`platform.platform()`)."""


class NoProvenance(Part):
    """`{}`: the study ran without recording its provenance (called from Python)."""

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


class Share(Part):
    """A share with its Wilson interval."""

    n: int
    """The denominator."""
    hits: int
    """The numerator."""
    rate: float | None
    """`hits / n`; null when n is 0."""
    ci: Interval | None
    """Wilson interval of `rate`."""


class ControlCell(Part):
    """The same effective injections, the agent's retries switched off."""

    n: int
    """Effective injections with a control."""
    recovered: int
    """Of them, correct without retries."""
    recovery: float | None
    """`recovered / n`."""
    ci: Interval | None
    """Wilson interval of `recovery`."""
    same_run: int
    """Controls that are the run itself: it never retried from hop h on, so without
    retries it makes the same decisions (deterministic or cached skills)."""


class FirstHit(Part):
    """Where the fault first changed what the agent saw (the label stays hop h)."""

    at_h: int
    """At hop h."""
    later: int
    """At a later hop (a faulted passage first entered view there)."""
    never: int
    """Never: the run searched nothing the fault changed."""


class RedundancyCell(Part):
    """Effective injections whose faulted fact is stated in this many passages."""

    n: int
    recovered: int
    ci: Interval | None
    """Wilson interval of `recovered / n`."""


class VerifyRates(Part):
    """How often VERIFY flags a hop (unsupported, or nothing selected)."""

    false_alarm: Share
    """Hops of the clean runs (first attempts): nothing was wrong."""
    detection: dict[str, Share]
    """Fault → its effective injections' faulted first attempts (early termination has
    no hop to verify)."""


class InViewScores(Part):
    """The faulted views whole: every real item in view a negative, its place included."""

    items: int
    """Items classified."""
    auc: float | None
    """ROC AUC of the logistic regression on every feature."""
    auc_content: float | None
    """The same without the positional features (score, rank, score over the best):
    whether the items look injected, apart from where the retriever put them."""


class InvisibilityCell(Part):
    """One fault: each injected item against the real items it stands in for
    (`cuer_agent.experiments.invisibility`)."""

    items: int
    """Items classified."""
    injected: int
    """Of them, injected."""
    auc: float | None
    """ROC AUC of the logistic regression (out of fold, folds grouped by example); 0.5
    is invisible. Null when the items cannot be split."""
    ci: Interval | None
    """95 % interval of `auc`, resampling examples."""
    auc_independent: float | None
    """ROC AUC of gradient-boosted trees on the same items (an independent check)."""
    auc_words: float | None
    """ROC AUC of the words alone (hashed 1-2-grams)."""
    feature_auc: dict[str, float]
    """Each numeric feature alone: its AUC, either direction."""
    detectable: bool
    """`auc` or `auc_independent` above the threshold."""
    top_feature: str | None
    """The single feature that separates best ("words": the n-gram model)."""
    in_view: InViewScores


class Accuracy(Part):
    """A clean accuracy with its Wilson interval."""

    accuracy: float | None
    ci: Interval | None


class ReaderCheck(Accuracy):
    """The reader the agent ran with (`cuer_agent.experiments.reader_check`): its clean
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


class Invisibility(Part):
    """Can a classifier tell what a fault put in view from real items?"""

    threshold: float
    """Above this AUC a fault is called detectable."""
    positional: list[str]
    """The features that say where the retriever placed an item."""
    faults: dict[str, InvisibilityCell]
    """Fault (or "replace (per hop)") → its figures."""


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
    recovery_effective_ci: Interval | None
    """Its Wilson interval."""
    control: ControlCell | None
    """The same effective injections with the agent's retries off; null when there is
    no control (forced stop, an agent without retries, `retries_control` off)."""
    verify_detected: int
    """Effective injections whose faulted first attempt VERIFY flagged."""
    first_hit: FirstHit
    by_redundancy: dict[HopKey, RedundancyCell]
    """Redundancy of the faulted fact → recovery of its effective injections (empty
    when the data set does not say)."""
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

class Abstention(Part):
    """A diagnoser scored as one that may abstain (hop 0 names no hop)."""

    coverage: float | None
    """Share of the failed traces on which it names a hop (>= 1)."""
    named: int
    """Traces on which it names a hop."""
    precision: float | None
    """Exact-hop accuracy where it names one."""
    precision_ci: Interval | None
    """Wilson interval of `precision`."""
    random_precision: float | None
    """A uniform hop's precision on the same traces: a random diagnoser at the same
    coverage (its accuracy is `coverage · random_precision`)."""


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
    abstention: Abstention
    beats_trace_rule: bool = absent()
    """The lower end of `ci` lies above the `trace-rule` control's accuracy at this
    depth (present when trace-rule ran)."""


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
    uses_environment_oracle: bool
    """Its probe re-runs a hop against a clean tool (an environment oracle)."""
    probing: bool
    """It re-executes the agent."""
    stand_in: str | None
    """What it stands in for, when it is a rule-based stand-in."""
    control: bool = False
    """It is a control (declared): what any trace would score."""
    blame_hist: dict[HopKey, float]
    """For each hop, the share of its diagnoses on failed runs naming it."""
    independence: float | None
    """The independence baseline overall."""
    abstention: Abstention
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

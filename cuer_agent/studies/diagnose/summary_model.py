"""The parts of `summary.json` that score the fault diagnosers (`diagnosers` of
`evaluate`). Conventions: `cuer_agent.studies._common.summary_model`. And the `summary.json` of
`diagnose --traces` (`TracesSummary`): plain JSON, but for each scored diagnoser's
`DiagnoserSummary`."""

from __future__ import annotations

from cuer_agent._part import Part, absent
from cuer_agent.studies._common.summary_model import HopKey, Interval, MeanCI


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


class AttributionScores(Part):
    """How well one diagnoser localises the injected faults of the runs that still failed
    (`cuer_agent.metrics.attribution` defines each metric; built by
    `cuer_agent.studies.diagnose.summary.attribution_scores`)."""

    n: int
    """Failed traces diagnosed."""
    errors: int
    """Diagnoses that raised."""
    error_rate: float | None
    """`errors / n`; null without diagnoses."""
    by_depth: dict[HopKey, DepthCell]
    """Injected depth → accuracy there."""
    exact_hop_acc: ProportionCI
    """Exact-hop accuracy overall (pooled: a constant naming the commonest depth ties a
    diagnoser here; read `balanced` and `kappa` beside it)."""
    balanced: MeanCI
    """Balanced accuracy: the mean of the per-depth accuracies over the labelled depths
    with at least 5 failures (hop 0 and n+1 depths of their own; an abstention is wrong,
    never hop 0); a constant scores 1/k over k depths (`cuer_agent.metrics.agreement`;
    bootstrap interval over examples)."""
    kappa: MeanCI
    """Cohen's κ between the hops it names and the labelled ones over the failed traces
    (an abstention a category of its own); a constant scores 0."""
    balanced_depths: list[HopKey]
    """The labelled depths `balanced` averages over."""
    constant: bool
    """It names one hop on 90 % of the failures or more: a constant, whatever it reads."""
    wrong_hop_acc: ProportionCI | None = absent()
    """The share naming a hop the label calls wrong (any wrong hop, or the first error:
    labels with every hop's verdict, `hop_verdicts`); present when every failure's label
    has them."""
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


class DiagnoserSummary(AttributionScores):
    """One diagnoser over the injected runs that still failed
    (`cuer_agent.metrics.attribution`, `cuer_agent.studies.diagnose.summary`)."""

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


# ------------------------------------------------------- diagnose --traces summary

class Histograms(Part):
    """Where a diagnoser's diagnoses fall."""

    n: int
    errors: int
    """Diagnoses naming no hop."""
    blame_hist: dict[str, float]
    """Hop → share of the named hops."""
    stage_hist: dict[str, float]
    """Stage → share of the named stages."""


class DiagnoserTraces(Histograms):
    """One diagnoser over the imported traces (`summary.diagnosers.<name>`)."""

    by_mode: dict[str, Histograms]
    uses_gold: bool
    probing: bool
    stand_in: str | None
    scored: DiagnoserSummary = absent()
    """Scored as the study scores it, when some traces carry a label."""


class SpansLeftOut(Part):
    """Spans not mapped onto a trace (listed in `unmapped.jsonl`)."""

    n: int
    by_reason: dict[str, int]
    """Reason → spans."""


class ChanceExpected(Part):
    """A uniform hop in 1..n on the scored failed traces (analytic)."""

    overall: float | None
    by_depth: dict[str, float | None]
    """Labelled hop → its expected accuracy."""


class LabelCounts(Part):
    """Where the labels came from and what was scored."""

    source: str
    """The labels file, or "records" (the exported intervention records)."""
    labelled: int
    """Traces that carry a label."""
    unmatched: list[str]
    """Labelled trace ids no trace in the file has."""
    scored_failed: int
    """Failed traces scored."""
    scored_clean: int
    """Correct clean traces scored (for the clean blame rate)."""
    chance_expected: ChanceExpected | None


class TracesSummary(Part):
    """`summary.json` of `diagnose --traces`."""

    source: str
    """The traces file."""
    gold: str | None
    """The gold file, when given."""
    traces: int
    """Traces in the file (mapped or not)."""
    mapped: int
    not_mapped: list[dict[str, str]]
    """The traces left out, with the reason (`Unmapped.row`)."""
    mapping: dict[str, int]
    """Mapping ("exact", "generic") → traces."""
    unmapped_spans: SpansLeftOut
    modes: dict[str, int]
    """Agent mode → traces."""
    labels: LabelCounts
    diagnosers: dict[str, DiagnoserTraces]
    hop_budget: int | None = absent()
    """The hop budget the agent ran with, where known (`--hops`, or the run directory
    diagnosed): what `trace-rule` and `chain-rule` read to place a premature stop. Absent:
    unknown — never guessed."""

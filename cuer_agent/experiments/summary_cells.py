"""The parts of `summary.json` shared by the studies, and those of `run` and `cuer`.

Every part forbids unknown keys, so a renamed key is an error. A key a study writes only
sometimes (`delta` of a counterfactual condition, `ablations`, `roles.dataset`…) is
declared with `absent()`: optional, never null. A free-form mapping (per condition, per
fault, per hop) is a `dict` of a typed cell. The top-level models are in
`cuer_agent.experiments.summaries`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

Interval = tuple[float, float]
"""A confidence interval [low, high]."""
HopKey = Annotated[str, Field(pattern=r"^[0-9]+$")]
"""A hop or depth number as a JSON object key ("1", "2", …; "0" is the answer level)."""


def hop_key(key: str) -> tuple[int, str]:
    """Sort key for hop / depth keys such as "1", "2", "10" (numeric first)."""
    return (int(key), "") if str(key).isdigit() else (10**9, str(key))


RoleLabel = Literal["corrective", "constructive", "distractive", "confidence-distorting",
                    "redundant", "neutral"]


class Part(BaseModel):
    """A part of a summary: unknown keys are errors; field docstrings document it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent() -> Any:
    """A key written only in some runs: optional, but never null when present."""
    return Field(None, json_schema_extra=_no_default)


# ------------------------------------------------------------------------- shared cells

class MeanCI(Part):
    """A mean with its confidence interval."""

    mean: float | None
    """The mean; null when there is nothing to average."""
    ci: Interval | None
    """Its 95 % interval [low, high] (percentile bootstrap, or Wilson for a 0/1 share);
    null with the mean."""


class Ledger(Part):
    """What the skill requests of a run cost, from its trace rows alone (a resumed run
    counts the same)."""

    requests: int
    """Skill requests the run made."""
    calls: int
    """Distinct requests: what a cold response cache costs."""
    cache_hits: int
    """Requests that repeat an earlier one (`requests - calls`)."""
    parse_failures: int
    """Replies that could not be parsed."""
    parse_failure_rate: float
    """`parse_failures / requests` (0.0 without requests)."""
    errors: int
    """Traces cut short by a request that still failed after all its attempts."""
    retries: int
    """Retries behind the replies the run used (and behind failed requests)."""
    prompt_tokens: int
    """Prompt tokens of the replies used."""
    completion_tokens: int
    """Completion tokens of the replies used."""
    tokens: int
    """`prompt_tokens + completion_tokens`."""


# ---------------------------------------------------------------------------------- run

class Accuracy(Part):
    """Mean answer scores over the examples (max over gold aliases)."""

    soft: float
    """Soft correctness: EM, yes/no agreement, numeric equivalence, or F1 >= 0.8."""
    em: float
    """Exact match, as the official HotpotQA evaluator normalises answers."""
    f1: float
    """Token F1, as the official HotpotQA evaluator computes it."""


class GoldHopsAccuracy(Part):
    """Soft accuracy over the examples with one gold hop count."""

    n: int
    """Examples with this gold hop count."""
    soft: float
    """Their mean soft correctness."""


class RunError(Part):
    """A trace that carries an error."""

    example_id: str
    """The example."""
    error: str
    """Why the trace stopped (the server's failure, after all retries)."""


# --------------------------------------------------------------------------------- cuer

class DeltaStat(Part):
    """A paired change against the original on the same examples."""

    mean: float | None
    """Mean Δ = U(original) − U(counterfactual): positive = the intervention hurt
    (confidence error: CE_cf − CE_orig; divergence: D itself); null without pairs."""
    ci: Interval | None
    """95 % percentile bootstrap interval of Δ (clustered by example for per-hop
    questions); null without pairs."""
    p: float | None
    """p-value: McNemar's exact test for correctness, a sign-flip permutation test for
    every other axis; null without pairs."""


class CuerDeltas(Part):
    """Δ per axis against the original."""

    correctness: DeltaStat
    """Δ soft correctness."""
    em: DeltaStat
    """Δ exact match."""
    f1: DeltaStat
    """Δ token F1."""
    grounding: DeltaStat
    """Δ grounding."""
    confidence_error: DeltaStat
    """Δ of the confidence utility −CE: CE_cf − CE_orig."""
    divergence: DeltaStat
    """D of the counterfactual from the original."""


class CuerCondition(Part):
    """One condition of the CUE-R study: the mean of each axis over its applied (not
    skipped) records, and — for a counterfactual — the paired change."""

    n: int
    """Applied records (examples, or per-hop questions) of the condition."""
    correctness: MeanCI
    """Soft correctness."""
    em: MeanCI
    """Exact match."""
    f1: MeanCI
    """Token F1."""
    grounding: MeanCI
    """Share of the used evidence that is gold supporting evidence."""
    confidence_error: MeanCI
    """|confidence − correctness|."""
    divergence: MeanCI
    """D from the original: weighted change of used ids, answer and confidence."""
    delta: CuerDeltas = absent()
    """Paired change against the original (absent for the original itself)."""


class F1Drop(Part):
    """Mean F1 drop against the original."""

    support_1: float
    """Removing the first gold support."""
    support_2: float
    """Removing the second gold support."""
    both: float
    """Removing both."""


class TwoSupport(Part):
    """The two-support ablation, over the examples every removal applied to."""

    n: int
    """Examples with all three removals and the original (0: the other keys are absent)."""
    f1_drop: F1Drop = absent()
    """Mean F1 drops."""
    synergy_share: float = absent()
    """Share where the joint drop exceeds the worse single drop."""
    strong_complementarity_share: float = absent()
    """Share where neither single removal hurts (F1 drop <= 0) but the joint one does."""


class DuplicatePosition(Part):
    """DUPLICATE with the copy at one position."""

    n: int
    """Applied records."""
    correctness_changed_share: float | None
    """Share of paired examples whose correctness changed; null without pairs."""
    divergence: float | None
    """Mean D from the original."""


class WeightSensitivity(Part):
    """D recomputed over a grid of weights: does a conclusion ever change?"""

    grid_points: int
    """Weight triples tried (multiples of the grid step, summing to 1)."""
    reference_ranking: list[str]
    """The operators ranked by mean D under the configured weights."""
    reference_significant: list[str]
    """The operators whose D interval excludes 0 under the configured weights."""
    points_changing_a_conclusion: int
    """Grid points under which the ranking or the significant set differs."""
    examples: list[tuple[float, float, float]]
    """Up to five such weight triples."""
    any_conclusion_changes: bool
    """Whether any grid point changes a conclusion."""


class Ablations(Part):
    """The ablations the config asked for (each key present only when asked)."""

    two_support: TwoSupport = absent()
    """REMOVE of each gold support, and of both."""
    duplicate_position: dict[Literal["end", "front", "after"], DuplicatePosition] = absent()
    """DUPLICATE per copy position."""
    replace_hardness: dict[Literal["easy", "medium", "hard"], MeanCI] = absent()
    """Correctness of REPLACE per replacement hardness."""
    weight_sensitivity: WeightSensitivity = absent()
    """Whether the conclusions about D depend on its weights."""


class RoleCounts(Part):
    """Examples per evidence-role label (every label, zeros included)."""

    corrective: int
    constructive: int
    distractive: int
    confidence_distorting: int = Field(alias="confidence-distorting")
    redundant: int
    neutral: int


class RoleStat(Part):
    """Dataset-level statistics of one delta."""

    n: int
    """Paired examples."""
    mean: float
    """Mean delta."""
    ci_low: float
    """Lower end of its bootstrap interval (at `settings.ci_level`)."""
    ci_high: float
    """Upper end."""


class RoleMetrics(Part):
    """Deltas of one condition against the original."""

    correctness: RoleStat
    f1: RoleStat
    conf_utility: RoleStat
    """Δ of the confidence utility −CE (CE_cf − CE)."""
    divergence: RoleStat


class Verdict(Part):
    """Whether a dataset-level role holds, and why."""

    holds: bool | None
    """Null: not decidable at dataset level, or its inputs are missing."""
    reason: str
    """The criterion and the figures it was decided on."""
    evidence: dict[str, RoleStat]
    """The statistics used, keyed `<condition>.<metric>`."""


class Verdicts(Part):
    """One verdict per role, highest priority first."""

    corrective: Verdict
    constructive: Verdict
    distractive: Verdict
    confidence_distorting: Verdict = Field(alias="confidence-distorting")
    redundant: Verdict


class RoleSettings(Part):
    """What the dataset-level verdicts were computed with."""

    ci_level: float
    """Confidence level of the bootstrap intervals."""
    n_resamples: int
    """Bootstrap resamples."""
    seed: int
    """Bootstrap seed."""
    redundant_divergence: float
    """Redundant needs the mean D under DUPLICATE below this."""
    confidence_conditions: list[str]
    """Conditions checked for confidence distortion."""


class DatasetRoles(Part):
    """Dataset-level role verdicts (`cuer_agent.roles.dataset_roles`)."""

    primary: RoleLabel
    """The highest-priority label that holds (neutral when none does)."""
    labels: list[RoleLabel]
    """Every label that holds, in priority order."""
    verdicts: Verdicts
    conditions: dict[str, RoleMetrics]
    """Deltas per condition (remove, duplicate, replace: those that ran)."""
    settings: RoleSettings


class SuppressedRoles(Part):
    """Dataset-level roles withheld because the data carry no verdict."""

    suppressed: str
    """Why (floor effect, or too few examples)."""


def _roles_kind(value: Any) -> str:
    suppressed = isinstance(value, dict) and "suppressed" in value
    return "SuppressedRoles" if suppressed else "DatasetRoles"


class SupportCheck(Part):
    """The check that tells corrective from constructive: after REMOVE the answer changed
    and another in-view item contains it."""

    changed: int
    """Items whose REMOVE hurt and changed the answer."""
    supported: int
    """Of those, answers another in-view item contains."""


class Roles(Part):
    """Evidence roles of the study's items."""

    n_items: int
    """Examples with the original, REMOVE and DUPLICATE applied."""
    items: RoleCounts
    """Item-level labels: the primary label of each item."""
    items_holding: RoleCounts
    """Item-level labels: every label that holds for an item (an item counts under each),
    so constructive counts the corrective items too, as the data-set level does."""
    support_check: SupportCheck
    dataset: Annotated[Annotated[DatasetRoles, Tag("DatasetRoles")]
                       | Annotated[SuppressedRoles, Tag("SuppressedRoles")],
                       Discriminator(_roles_kind)] = absent()
    """Dataset-level verdicts (absent when REMOVE has no paired examples)."""

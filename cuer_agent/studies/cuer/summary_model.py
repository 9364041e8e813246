"""The parts of `summary.json` of the CUE-R study (`cuer`, and `single_shot` of
`evaluate`). Conventions: `cuer_agent.studies._common.summary_model`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from cuer_agent._part import Part, absent
from cuer_agent.config import CuerConfig
from cuer_agent.roles import DatasetRoles
from cuer_agent.studies._common.summary_model import Interval, Ledger, MeanCI, Skipped


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


class SuppressedRoles(Part):
    """Dataset-level roles withheld because the data carry no verdict."""

    suppressed: str
    """Why (floor effect, or too few examples)."""


def _roles_kind(value: Any) -> str:
    """Which of the two `roles.dataset` shapes `value` is — a dict being validated, or a
    model being dumped (the typed report's summaries)."""
    suppressed = isinstance(value, SuppressedRoles) or (isinstance(value, dict)
                                                         and "suppressed" in value)
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


# ----------------------------------------------------------------------- cuer summary

class CuerResults(Part):
    """The CUE-R study's figures, from its record rows alone
    (`cuer_agent.studies.cuer.summary`)."""

    n: int
    """Examples (or per-hop questions) whose original ran."""
    conditions: dict[str, CuerCondition]
    """original, remove, replace, duplicate, zero_retrieval, random_target and the
    ablation conditions, in run order."""
    skipped: Skipped
    ablations: Ablations = absent()
    """Present when the config asks for an ablation."""


class CuerSummary(CuerResults):
    """`summary.json` of `cuer-agent cuer`, from its record rows alone."""

    findings: list[str]
    """One sentence per main operator: does Δcorrectness follow the paper's pattern? (or
    why the data carry no verdict)."""
    roles: Roles
    ledger: Ledger
    config: CuerConfig
    """The `[cuer]` study config."""

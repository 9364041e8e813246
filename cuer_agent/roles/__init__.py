"""Evidence-role taxonomy (paper-notes §A, "Evidence roles").

The five roles are *operational* labels: they describe how the run behaved when one
evidence item (the example's target item) was intervened on. They are not claims about
what the model does internally.

Sign convention (the same as `cuer_agent.metrics.utility`): every delta is
``U(original) − U(counterfactual)``, so **a positive delta means the intervention hurt**.

* Δcorrectness = correct − correct_cf (soft correctness, per example in {−1, 0, 1}).
* ΔF1 = F1 − F1_cf.
* Δconf-utility (confidence-utility): the utility is −CE, so
  Δ = (−CE) − (−CE_cf) = **CE_cf − CE**; positive = the counterfactual is *worse*
  calibrated. `ConditionEffects.from_outcomes`
  does this subtraction for you.
* D is trace divergence (≥ 0, not a utility, no sign).

The paper defines the roles in words only and gives **no thresholds**; every number
below is a field of `RoleThresholds` (a config value), shown with its default.

Item level (`item_roles`, `item_role`): one target item, its per-example deltas under
each condition X that was run. Predicates (defaults in brackets):

* hurts(X): Δcorrectness ≥ `hurt_correctness` [1] or ΔF1 ≥ `hurt_f1` [0.2]
* helps(X): Δcorrectness ≤ −`hurt_correctness` or ΔF1 ≤ −`hurt_f1`
* unchanged(X): Δcorrectness = 0 and |ΔF1| < `redundant_f1` [0.05]
  and D < `redundant_divergence` [0.1]
* conf_shift(X): normalized answer unchanged and |Δconf-utility| ≥ `confidence_shift` [0.1]

| priority | label | item-level criterion |
|---|---|---|
| 1 | corrective | hurts(REMOVE), answer changed under REMOVE, and that answer is supported by another in-view item (`remove_answer_supported_elsewhere`) |
| 2 | constructive | hurts(REMOVE) |
| 3 | distractive | helps(REMOVE) |
| 4 | confidence-distorting | conf_shift(X) for some X run among `confidence_conditions` [REMOVE, DUPLICATE, REPLACE] |
| 5 | redundant | unchanged(REMOVE) and unchanged(DUPLICATE) |
| — | neutral | none of the above (e.g. ΔF1 = 0.1 under REMOVE) |

Comparisons allow a 1e-9 float tolerance at the bound (0.7 − 0.5 counts as ≥ 0.2).
Corrective (the item repairs a context that misleads without it) is decided from the
caller's support flag: after REMOVE the model switched to an answer another in-view item
supports. `item_roles` returns every label that applies, in priority order
(``("neutral",)`` if none); `item_role` returns the first. Every corrective item is also
constructive; priority resolves that and the other overlaps (a REMOVE that moves
correctness and F1 in opposite directions is both constructive and distractive →
constructive; a small REMOVE effect with a confidence shift is redundant and
confidence-distorting → confidence-distorting). REPLACE enters only the
confidence-distorting check: REMOVE isolates the item's own effect, REPLACE also adds one.

Dataset level (`dataset_roles`): arrays of per-example deltas per condition, keyed
"correctness", "f1", "conf_utility", "divergence". A verdict
rests on whether the percentile bootstrap CI of the mean delta
(`metrics.stats.bootstrap_ci`; `ci_level` [0.95], 5000 resamples, seed 42) excludes 0:

| label | dataset-level criterion |
|---|---|
| constructive | CI of Δcorrectness under REMOVE entirely > 0 |
| distractive | CI of Δcorrectness under REMOVE entirely < 0 |
| confidence-distorting | for some X among `confidence_conditions`: CI of Δcorrectness under X includes 0 and CI of Δconf-utility under X excludes 0 |
| redundant | CIs of Δcorrectness under REMOVE and DUPLICATE both include 0, and mean D under DUPLICATE < `redundant_divergence` [0.1] |
| corrective | not decided from deltas (`holds` is None): needs the per-item support flag; count item labels with `role_counts` |

The primary dataset label follows the same priority. Each verdict carries the statistics
it rests on and a one-line reason, next to every condition's means and CIs, so a report
can show why.

`role_counts` counts labels over all six labels (zeros included, fixed order).

Where it lives: the vocabulary and `RoleThresholds` in `_thresholds`, the item level in
`_item`, the dataset level in `_dataset`; every name is imported from here.
"""  # noqa: E501 — markdown table rows (copied into docs/concepts.md) cannot wrap

from cuer_agent.roles._dataset import (
    DatasetRoles,
    Evidence,
    RoleSettings,
    RoleStat,
    Verdict,
    Verdicts,
    dataset_roles,
)
from cuer_agent.roles._item import (
    ConditionEffects,
    ItemEffects,
    item_role,
    item_roles,
    role_counts,
)

# The vocabulary as a reader of role labels needs it; the conditions and metric names the
# criteria are written in stay in `_thresholds`, beside the thresholds.
from cuer_agent.roles._thresholds import (
    CONSTRUCTIVE,
    LABELS,
    ROLE_PRIORITY,
    RoleLabel,
    RoleOverrides,
    RoleThresholds,
)

__all__ = [
    "CONSTRUCTIVE", "LABELS", "ROLE_PRIORITY", "ConditionEffects", "DatasetRoles", "Evidence",
    "ItemEffects", "RoleLabel", "RoleOverrides", "RoleSettings", "RoleStat", "RoleThresholds",
    "Verdict", "Verdicts", "dataset_roles", "item_role", "item_roles", "role_counts",
]

"""Evidence roles of a CUE-R run: item labels per example and dataset-level verdicts.

The criteria live in `cuer_agent.roles`; this module only feeds it the study's records.
"""

from __future__ import annotations

import numpy as np

from cuer_agent.config import CuerConfig
from cuer_agent.roles import (
    CONSTRUCTIVE,
    ConditionEffects,
    DatasetRoles,
    ItemEffects,
    RoleThresholds,
    dataset_roles,
    item_roles,
    role_counts,
)
from cuer_agent.studies.cuer.runner import RecordRow
from cuer_agent.studies.cuer.summary import (
    Table,
    by_condition,
    delta,
    paired,
    paired_ids,
    parent_example,
)
from cuer_agent.studies.cuer.summary_model import (
    RoleCounts,
    Roles,
    SupportCheck,
    SuppressedRoles,
)

ROLE_CONDITIONS = ("remove", "duplicate", "replace")


def _effects(table: Table, condition: str,
             example_id: str) -> ConditionEffects:
    orig, cf = table["original"][example_id], table[condition][example_id]
    return ConditionEffects.from_outcomes(
        correct=orig["correctness"], correct_cf=cf["correctness"], f1=orig["f1"],
        f1_cf=cf["f1"], confidence_error=orig["confidence_error"],
        confidence_error_cf=cf["confidence_error"], divergence=cf["divergence"],
        answer_changed=cf["d_answer"] > 0)


def roles_summary(records: list[RecordRow], config: CuerConfig, *,
                  suppressed: str | None = None) -> Roles:
    """Item-level labels and the dataset-level verdicts; the verdicts are withheld, with
    the reason, when `suppressed` says why the data carry none."""
    table = by_condition(records)
    thresholds = RoleThresholds.overridden(config.roles)
    ids = sorted(set(table.get("original", {})) & set(table.get("remove", {}))
                 & set(table.get("duplicate", {})))
    labels, holding = [], []
    changed = supported = 0
    for i in ids:
        replace = _effects(table, "replace", i) if i in table.get("replace", {}) else None
        effects = ItemEffects(
            remove=_effects(table, "remove", i), duplicate=_effects(table, "duplicate", i),
            replace=replace,
            remove_answer_supported_elsewhere=table["remove"][i]["answer_supported"] > 0)
        holds = item_roles(effects, thresholds)
        labels.append(holds[0])
        holding.append(holds)
        if CONSTRUCTIVE in holds and effects.remove.answer_changed:
            changed += 1
            supported += effects.remove_answer_supported_elsewhere
    deltas: dict[str, dict[str, np.ndarray]] = {}
    clusters: dict[str, list[str]] = {}
    for condition in ROLE_CONDITIONS:
        if not table.get(condition):
            continue
        deltas[condition] = {}
        # clustered as the study's own intervals are (`cuer.summary._ci`)
        clusters[condition] = [parent_example(i) for i in paired_ids(table, condition)]
        for axis, key in (("correctness", "correctness"), ("f1", "f1"),
                          ("confidence_error", "conf_utility"), ("divergence", "divergence")):
            orig, cf = paired(table, condition, axis)
            deltas[condition][key] = delta(orig, cf, axis)
    dataset: DatasetRoles | SuppressedRoles | None = None
    if "remove" in deltas and len(deltas["remove"]["correctness"]):
        dataset = (SuppressedRoles(suppressed=suppressed) if suppressed is not None
                   else dataset_roles(deltas, thresholds,
                                      n_resamples=config.bootstrap_resamples,
                                      seed=config.bootstrap_seed, clusters=clusters))
    return Roles(n_items=len(ids), items=RoleCounts.model_validate(role_counts(labels)),
                 items_holding=RoleCounts.model_validate(role_counts(holding)),
                 support_check=SupportCheck(changed=changed, supported=supported),
                 **({"dataset": dataset} if dataset is not None else {}))

"""`summary.json` of the CUE-R study, computed from `records.jsonl` rows alone.

Per condition and axis: the mean with a percentile bootstrap CI. Under `delta`, the
paired change against the original on the same examples, with the sign convention of
paper-notes §A — delta = U(original) − U(counterfactual), positive = the intervention
hurt; confidence error is the utility −CE, so its delta is CE_cf − CE_orig; for
divergence the delta is D itself. p-values: McNemar's exact test for (binary)
correctness, a sign-flip permutation test for every other axis.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Literal, SupportsFloat

import numpy as np

from cuer_agent.config import CuerConfig
from cuer_agent.metrics.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    mcnemar_exact,
    sign_flip_test,
)
from cuer_agent.metrics.utility import DivergenceWeights, weigh
from cuer_agent.studies._common.summary_model import Interval, MeanCI, Skipped
from cuer_agent.studies.cuer.runner import AXES, RecordRow
from cuer_agent.studies.cuer.summary_model import (
    Ablations,
    CuerCondition,
    CuerDeltas,
    CuerResults,
    DeltaStat,
    DuplicatePosition,
    F1Drop,
    TwoSupport,
    WeightSensitivity,
)

Table = dict[str, dict[str, dict[str, float]]]
"""condition → example id → the run's axes (`cuer.runner.trace_axes`)."""


def _r(x: SupportsFloat) -> float:
    return round(float(x), 6)


def parent_example(example_id: str) -> str:
    """The example a per-hop question (`<example>#h<k>`) belongs to; itself otherwise."""
    return example_id.rpartition("#h")[0] or example_id


def _ci(values: np.ndarray, config: CuerConfig, ids: list[str] | None = None) -> Interval:
    """Percentile bootstrap CI of the mean; clustered by parent example when the ids are
    per-hop questions of the same examples (`<example>#h<k>`), which are correlated."""
    parents = [parent_example(i) for i in ids] if ids is not None else []
    if parents and len(set(parents)) < len(parents):
        lo, hi = cluster_bootstrap_ci(values, parents, n_resamples=config.bootstrap_resamples,
                                      seed=config.bootstrap_seed)
    else:
        lo, hi = bootstrap_ci(values, n_resamples=config.bootstrap_resamples,
                              seed=config.bootstrap_seed)
    return _r(lo), _r(hi)


def by_condition(rows: Sequence[RecordRow]) -> Table:
    """condition → example id → metrics, for applied (not skipped) records."""
    out: Table = defaultdict(dict)
    for row in rows:
        if row["metrics"] is not None:
            out[row["record"]["condition"]][row["record"]["example_id"]] = row["metrics"]
    return out


def paired_ids(table: Table, condition: str) -> list[str]:
    """The examples both the original and `condition` have, in id order."""
    return sorted(set(table.get("original", {})) & set(table.get(condition, {})))


def paired(table: Table, condition: str, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """(original, counterfactual) values of an axis on the examples both have, in id order."""
    ids = paired_ids(table, condition)
    orig = np.array([table["original"][i][axis] for i in ids], dtype=float)
    cf = np.array([table[condition][i][axis] for i in ids], dtype=float)
    return orig, cf


def delta(orig: np.ndarray, cf: np.ndarray, axis: str) -> np.ndarray:
    if axis == "divergence":
        return cf
    # The utility of a confidence error is −CE: its delta turns sign.
    moved: np.ndarray = cf - orig if axis == "confidence_error" else orig - cf
    return moved


def _delta_stat(table: Table, condition: str, axis: str, config: CuerConfig) -> DeltaStat:
    orig, cf = paired(table, condition, axis)
    d = delta(orig, cf, axis)
    if not len(d):
        return DeltaStat(mean=None, ci=None, p=None)
    p = (mcnemar_exact(orig >= 1, cf >= 1) if axis == "correctness"
         else sign_flip_test(d, n_resamples=config.bootstrap_resamples,
                             seed=config.bootstrap_seed))
    return DeltaStat(mean=_r(d.mean()), ci=_ci(d, config, paired_ids(table, condition)),
                     p=_r(p))


def condition_summary(table: Table, condition: str, config: CuerConfig) -> CuerCondition:
    ids = sorted(table.get(condition, {}))
    means = {}
    for axis in AXES:
        values = np.array([table[condition][i][axis] for i in ids], dtype=float)
        means[axis] = MeanCI(mean=_r(values.mean()) if len(values) else None,
                             ci=_ci(values, config, ids) if len(values) else None)
    if condition == "original":
        return CuerCondition(n=len(ids), **means)
    deltas = CuerDeltas(**{axis: _delta_stat(table, condition, axis, config)
                           for axis in AXES})
    return CuerCondition(n=len(ids), **means, delta=deltas)


def skipped(rows: Sequence[RecordRow]) -> Skipped:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        if row["metrics"] is None:
            out[row["record"]["condition"]][row["record"].get("skipped", "")] += 1
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def two_support(table: Table) -> TwoSupport:
    """F1 drops for removing each gold support and both; synergy = the joint drop exceeds
    the worse single drop; strong complementarity = neither single removal hurts (F1
    drop <= 0) but the joint removal does."""
    names = ("remove_support_1", "remove_support_2", "remove_both_supports")
    ids = sorted(set.intersection(*(set(table.get(n, {})) for n in (*names, "original"))))
    if not ids:
        return TwoSupport(n=0)
    drops = {n: np.array([table["original"][i]["f1"] - table[n][i]["f1"] for i in ids])
             for n in names}
    s1, s2, both = drops[names[0]], drops[names[1]], drops[names[2]]
    return TwoSupport(
        n=len(ids),
        f1_drop=F1Drop(support_1=_r(s1.mean()), support_2=_r(s2.mean()),
                       both=_r(both.mean())),
        synergy_share=_r(float(np.mean(both > np.maximum(s1, s2)))),
        strong_complementarity_share=_r(float(np.mean((s1 <= 0) & (s2 <= 0) & (both > 0)))))


def changed_share(table: Table, condition: str) -> float | None:
    orig, cf = paired(table, condition, "correctness")
    return _r(np.mean(orig != cf)) if len(orig) else None


def weight_sensitivity(table: Table, conditions: list[str],
                       config: CuerConfig) -> WeightSensitivity:
    """Recompute D over a grid of weights (each weight a multiple of the grid step, summing
    to 1): does the paper's kind of conclusion — the ranking of the three operators by
    mean D, and which of them have a D CI excluding 0 — ever change?"""
    step = config.weight_grid_step
    ticks = [round(step * i, 6) for i in range(1, round(1 / step))]
    grid = [(a, b, round(1 - a - b, 6)) for a, b in itertools.product(ticks, ticks)
            if 1 - a - b >= step - 1e-9]

    def conclusions(weights: tuple[float, float, float]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        means, significant = {}, []
        for c in conditions:
            ids = sorted(table.get(c, {}))
            d = np.array([weigh((table[c][i]["d_used"], table[c][i]["d_answer"],
                                 table[c][i]["d_confidence"]), DivergenceWeights(*weights))
                          for i in ids])
            if not len(d):
                continue
            means[c] = d.mean()
            if bootstrap_ci(d, n_resamples=1000, seed=config.bootstrap_seed)[0] > 0:
                significant.append(c)
        return tuple(sorted(means, key=lambda c: (-means[c], c))), tuple(sorted(significant))

    reference = conclusions(config.divergence_weights)
    changed = [w for w in grid if conclusions(w) != reference]
    return WeightSensitivity(grid_points=len(grid), reference_ranking=list(reference[0]),
                             reference_significant=list(reference[1]),
                             points_changing_a_conclusion=len(changed), examples=changed[:5],
                             any_conclusion_changes=bool(changed))


def summarize_cuer(rows: Sequence[RecordRow], config: CuerConfig) -> CuerResults:
    table = by_condition(rows)
    names = ["original"] + [name for name, _, _ in config.conditions()]
    conditions = {c: condition_summary(table, c, config) for c in names}
    ablations = _ablations(table, conditions, names, config)
    return CuerResults(n=len(table.get("original", {})), conditions=conditions,
                       skipped=skipped(rows),
                       **({"ablations": ablations} if ablations is not None else {}))


def _ablations(table: Table, conditions: dict[str, CuerCondition], names: list[str],
               config: CuerConfig) -> Ablations | None:
    """The ablations the config asks for; None when it asks for none."""
    parts: dict[str, object] = {}
    if config.two_support:
        parts["two_support"] = two_support(table)
    if config.duplicate_positions:
        positions: tuple[Literal["end", "front", "after"], ...] = ("end", "front", "after")
        parts["duplicate_position"] = {
            p: DuplicatePosition(n=len(table.get(c, {})),
                                 correctness_changed_share=changed_share(table, c),
                                 divergence=conditions[c].divergence.mean)
            for p in positions
            for c in [_variant("duplicate", config.duplicate_position, p)]}
    if config.replace_hardness_sweep:
        parts["replace_hardness"] = {
            h: conditions[_variant("replace", config.replace_hardness, h)].correctness
            for h in ("easy", "medium", "hard")}
    if config.weight_sensitivity:
        operators: list[str] = [c for c in ("remove", "replace", "duplicate") if c in names]
        parts["weight_sensitivity"] = weight_sensitivity(table, operators, config)
    return Ablations(**parts) if parts else None


def _variant(operator: str, default: str, value: str) -> str:
    """Condition name of an operator variant: the default one runs under the plain name."""
    return operator if value == default else f"{operator}_{value}"

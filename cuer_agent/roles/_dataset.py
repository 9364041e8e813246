"""Dataset-level evidence roles: verdicts from the bootstrap CIs of per-example delta
arrays (`dataset_roles`), each with the statistics it rests on and a one-line reason.
Criteria: `cuer_agent.roles`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field

from cuer_agent._part import Part
from cuer_agent.metrics.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    bound_digits,
    cluster_bootstrap_ci,
)
from cuer_agent.roles._thresholds import (
    CONF_UTILITY,
    CONFIDENCE_DISTORTING,
    CONSTRUCTIVE,
    CORRECTIVE,
    CORRECTNESS,
    DISTRACTIVE,
    DIVERGENCE,
    DUPLICATE,
    NEUTRAL,
    REDUNDANT,
    REMOVE,
    ROLE_PRIORITY,
    RoleLabel,
    RoleThresholds,
)


def _signed(value: float) -> str:
    """`value` with a sign, with the digits that show the sign of a nonzero value."""
    return f"{value:+.{bound_digits(value)}f}"


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

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0.0 or self.ci_high < 0.0

    def describe(self, label: str, level: float) -> str:
        """Bounds that are not 0 never print as 0 (the verdicts rest on their sign)."""
        return (f"{label}: mean {self.mean:+.3f}, {level:.0%} CI "
                f"[{_signed(self.ci_low)}, {_signed(self.ci_high)}]")


Evidence = dict[str, RoleStat]
"""`"<condition>.<metric>"` → its statistics."""


class Verdict(Part):
    """Whether a dataset-level role holds, and why."""

    holds: bool | None
    """Null: not decidable at dataset level, or its inputs are missing."""
    reason: str
    """The criterion and the figures it was decided on."""
    evidence: Evidence
    """The statistics used, keyed `<condition>.<metric>`."""


class Verdicts(Part):
    """One verdict per role, highest priority first."""

    corrective: Verdict
    constructive: Verdict
    distractive: Verdict
    confidence_distorting: Verdict = Field(alias=CONFIDENCE_DISTORTING)
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
    conditions: dict[str, dict[str, RoleStat]]
    """Condition → metric → the statistics of its deltas. The CUE-R study gives
    correctness, f1, conf_utility (Δ of the confidence utility −CE: CE_cf − CE) and
    divergence, for remove, duplicate and replace: those that ran."""
    settings: RoleSettings


def _verdict(holds: bool | None, reason: str, evidence: Evidence | None = None) -> Verdict:
    return Verdict(holds=holds, reason=reason, evidence=evidence or {})


def _condition_stats(condition: str, metrics: Mapping[str, ArrayLike], *, n_resamples: int,
                     seed: int, level: float,
                     clusters: Sequence[str] | None = None) -> dict[str, RoleStat]:
    names = list(metrics)
    arrays = [np.asarray(metrics[m], dtype=np.float64).ravel() for m in names]
    if not arrays:
        return {}
    lengths = {m: a.size for m, a in zip(names, arrays, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{condition}: delta arrays differ in length {lengths}")
    if arrays[0].size == 0:
        raise ValueError(f"{condition}: no examples (empty delta arrays)")
    for name, arr in zip(names, arrays, strict=True):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{condition}.{name}: deltas must be finite (found NaN/inf)")
    stack = np.vstack(arrays)
    if clusters is not None and len(set(clusters)) < len(clusters):
        cis = np.vstack([cluster_bootstrap_ci(row, clusters, n_resamples=n_resamples,
                                              seed=seed, confidence=level) for row in stack])
    else:
        cis = bootstrap_ci(stack, n_resamples=n_resamples, seed=seed, confidence=level)
    return {name: RoleStat(n=int(stack.shape[1]), mean=float(stack[i].mean()),
                        ci_low=float(cis[i, 0]), ci_high=float(cis[i, 1]))
            for i, name in enumerate(names)}


Stats = dict[str, dict[str, RoleStat]]
"""Condition → metric → its statistics."""


def _describe(s: RoleStat, cond: str, metric: str, level: float) -> str:
    return s.describe(f"Δ{metric} under {cond}", level)


def _remove_verdicts(rc: RoleStat, level: float) -> dict[str, Verdict]:
    """Constructive and distractive: where REMOVE's Δcorrectness CI lies; corrective is
    not decided at this level."""
    rc_key = f"{REMOVE}.{CORRECTNESS}"
    described = _describe(rc, REMOVE, CORRECTNESS, level)
    return {
        CONSTRUCTIVE: _verdict(
            rc.ci_low > 0.0,
            described + (" is entirely > 0" if rc.ci_low > 0.0 else " is not entirely > 0"),
            {rc_key: rc}),
        DISTRACTIVE: _verdict(
            rc.ci_high < 0.0,
            described + (" is entirely < 0" if rc.ci_high < 0.0 else " is not entirely < 0"),
            {rc_key: rc}),
        CORRECTIVE: _verdict(
            None, "not decided at dataset level: needs the per-item support flag "
                  "(use item_roles and role_counts)"),
    }


def _confidence_verdict(stats: Stats, t: RoleThresholds) -> Verdict:
    """Any checked condition with correctness CI ∋ 0 and CE-utility CI ∌ 0."""
    level = t.ci_level
    conf_evidence: Evidence = {}
    conf_hits: list[str] = []
    conf_misses: list[str] = []
    for cond in t.confidence_conditions:
        sc, sq = stats.get(cond, {}).get(CORRECTNESS), stats.get(cond, {}).get(CONF_UTILITY)
        if sc is None or sq is None:
            continue
        conf_evidence[f"{cond}.{CORRECTNESS}"] = sc
        conf_evidence[f"{cond}.{CONF_UTILITY}"] = sq
        text = (f"{_describe(sc, cond, CORRECTNESS, level)}; "
                f"{_describe(sq, cond, CONF_UTILITY, level)}")
        (conf_hits if not sc.excludes_zero and sq.excludes_zero else conf_misses).append(text)
    if conf_hits:
        return _verdict(
            True, "correctness CI includes 0 but confidence-utility CI excludes 0: "
                  + " | ".join(conf_hits), conf_evidence)
    if conf_misses:
        return _verdict(
            False, "no condition with correctness CI including 0 and confidence-utility CI "
                   "excluding 0: " + " | ".join(conf_misses), conf_evidence)
    return _verdict(
        None, f"no condition in {list(t.confidence_conditions)} has both "
              f"{CORRECTNESS!r} and {CONF_UTILITY!r} deltas")


def _redundant_verdict(stats: Stats, t: RoleThresholds) -> Verdict:
    """REMOVE's and DUPLICATE's correctness CIs both ∋ 0, mean D under DUPLICATE small."""
    level = t.ci_level
    rc = stats[REMOVE][CORRECTNESS]
    dc = stats.get(DUPLICATE, {}).get(CORRECTNESS)
    dd = stats.get(DUPLICATE, {}).get(DIVERGENCE)
    if dc is None or dd is None:
        return _verdict(
            None, f"needs {DUPLICATE}.{CORRECTNESS} and {DUPLICATE}.{DIVERGENCE} deltas")
    holds = (not rc.excludes_zero and not dc.excludes_zero
             and dd.mean < t.redundant_divergence)
    return _verdict(
        holds,
        f"{_describe(rc, REMOVE, CORRECTNESS, level)}; "
        f"{_describe(dc, DUPLICATE, CORRECTNESS, level)} "
        f"(both must include 0); mean D under {DUPLICATE} {dd.mean:.3f} "
        f"(must be < {t.redundant_divergence:g})",
        {f"{REMOVE}.{CORRECTNESS}": rc, f"{DUPLICATE}.{CORRECTNESS}": dc,
         f"{DUPLICATE}.{DIVERGENCE}": dd})


def dataset_roles(deltas_by_condition: Mapping[str, Mapping[str, ArrayLike]],
                  thresholds: RoleThresholds = RoleThresholds(), *,
                  n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  clusters: Mapping[str, Sequence[str]] | None = None
                  ) -> DatasetRoles:
    """Dataset-level role verdicts from per-example delta arrays.

    `deltas_by_condition` maps a condition ("remove", "duplicate", "replace", or any
    other name, reported only) to metric arrays of equal length, keyed "correctness",
    "f1", "conf_utility" (CE_cf − CE), "divergence" (others, e.g. "grounding", are
    reported too). `clusters` (condition → a cluster label per example, e.g. the parent
    example of per-hop questions) makes a condition's intervals the clustered bootstrap,
    as the study's own tables use, so one delta has one interval everywhere.
    REMOVE's "correctness" is required; a verdict whose inputs are
    missing gets ``holds=None``. Criteria: the module docstring's table.

    Returns the verdicts as the CUE-R summary holds them (`roles.dataset` of its
    `summary.json`): the primary label and every label that holds, each role's verdict
    with the statistics it rests on, every condition's statistics per metric, and the
    settings.
    """
    t = thresholds
    if CORRECTNESS not in deltas_by_condition.get(REMOVE, {}):
        raise ValueError(f"dataset_roles needs deltas_by_condition[{REMOVE!r}]"
                         f"[{CORRECTNESS!r}]; got conditions {sorted(deltas_by_condition)}")
    level = t.ci_level
    stats = {cond: _condition_stats(cond, metrics, n_resamples=n_resamples, seed=seed,
                                    level=level, clusters=(clusters or {}).get(cond))
             for cond, metrics in deltas_by_condition.items()}
    verdicts = _remove_verdicts(stats[REMOVE][CORRECTNESS], level)
    verdicts[CONFIDENCE_DISTORTING] = _confidence_verdict(stats, t)
    verdicts[REDUNDANT] = _redundant_verdict(stats, t)
    labels = [label for label in ROLE_PRIORITY if verdicts[label].holds]
    return DatasetRoles(
        primary=labels[0] if labels else NEUTRAL, labels=labels,
        verdicts=Verdicts.model_validate({label: verdicts[label] for label in ROLE_PRIORITY}),
        conditions=stats,
        settings=RoleSettings(ci_level=level, n_resamples=n_resamples, seed=seed,
                              redundant_divergence=t.redundant_divergence,
                              confidence_conditions=list(t.confidence_conditions)))

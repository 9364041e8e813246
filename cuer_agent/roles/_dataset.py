"""Dataset-level evidence roles: verdicts from the bootstrap CIs of per-example delta
arrays (`dataset_roles`), each with the statistics it rests on and a one-line reason.
Criteria: `cuer_agent.roles`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import TypedDict  # typing's TypedDict is no pydantic field on 3.11

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
    RoleThresholds,
)


def _signed(value: float) -> str:
    """`value` with a sign, with the digits that show the sign of a nonzero value."""
    return f"{value:+.{bound_digits(value)}f}"


@dataclass(frozen=True)
class _Stat:
    n: int
    mean: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0.0 or self.ci_high < 0.0

    def describe(self, label: str, level: float) -> str:
        """Bounds that are not 0 never print as 0 (the verdicts rest on their sign)."""
        return (f"{label}: mean {self.mean:+.3f}, {level:.0%} CI "
                f"[{_signed(self.ci_low)}, {_signed(self.ci_high)}]")


Evidence = dict[str, dict[str, float | int]]
"""`"<condition>.<metric>"` → {"n", "mean", "ci_low", "ci_high"}."""


class VerdictRecord(TypedDict):
    """Whether a dataset-level role holds (None: not decided), why, and on what."""

    holds: bool | None
    reason: str
    evidence: Evidence


class RoleSettings(TypedDict):
    """The settings a dataset-level verdict was reached with."""

    ci_level: float
    n_resamples: int
    seed: int
    redundant_divergence: float
    confidence_conditions: list[str]


class DatasetRoleVerdicts(TypedDict):
    """What `dataset_roles` returns (its docstring)."""

    primary: str
    labels: list[str]
    verdicts: dict[str, VerdictRecord]
    conditions: dict[str, dict[str, dict[str, float | int]]]
    settings: RoleSettings


@dataclass
class _Verdict:
    holds: bool | None
    reason: str
    evidence: Evidence = field(default_factory=dict)

    def as_dict(self) -> VerdictRecord:
        return {"holds": self.holds, "reason": self.reason, "evidence": self.evidence}


def _condition_stats(condition: str, metrics: Mapping[str, ArrayLike], *, n_resamples: int,
                     seed: int, level: float,
                     clusters: Sequence[str] | None = None) -> dict[str, _Stat]:
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
    return {name: _Stat(n=int(stack.shape[1]), mean=float(stack[i].mean()),
                        ci_low=float(cis[i, 0]), ci_high=float(cis[i, 1]))
            for i, name in enumerate(names)}


Stats = dict[str, dict[str, _Stat]]
"""Condition → metric → its statistics."""


def _describe(s: _Stat, cond: str, metric: str, level: float) -> str:
    return s.describe(f"Δ{metric} under {cond}", level)


def _remove_verdicts(rc: _Stat, level: float) -> dict[str, _Verdict]:
    """Constructive and distractive: where REMOVE's Δcorrectness CI lies; corrective is
    not decided at this level."""
    rc_key = f"{REMOVE}.{CORRECTNESS}"
    described = _describe(rc, REMOVE, CORRECTNESS, level)
    return {
        CONSTRUCTIVE: _Verdict(
            rc.ci_low > 0.0,
            described + (" is entirely > 0" if rc.ci_low > 0.0 else " is not entirely > 0"),
            {rc_key: rc.as_dict()}),
        DISTRACTIVE: _Verdict(
            rc.ci_high < 0.0,
            described + (" is entirely < 0" if rc.ci_high < 0.0 else " is not entirely < 0"),
            {rc_key: rc.as_dict()}),
        CORRECTIVE: _Verdict(
            None, "not decided at dataset level: needs the per-item support flag "
                  "(use item_roles and role_counts)"),
    }


def _confidence_verdict(stats: Stats, t: RoleThresholds) -> _Verdict:
    """Any checked condition with correctness CI ∋ 0 and CE-utility CI ∌ 0."""
    level = t.ci_level
    conf_evidence: Evidence = {}
    conf_hits: list[str] = []
    conf_misses: list[str] = []
    for cond in t.confidence_conditions:
        sc, sq = stats.get(cond, {}).get(CORRECTNESS), stats.get(cond, {}).get(CONF_UTILITY)
        if sc is None or sq is None:
            continue
        conf_evidence[f"{cond}.{CORRECTNESS}"] = sc.as_dict()
        conf_evidence[f"{cond}.{CONF_UTILITY}"] = sq.as_dict()
        text = (f"{_describe(sc, cond, CORRECTNESS, level)}; "
                f"{_describe(sq, cond, CONF_UTILITY, level)}")
        (conf_hits if not sc.excludes_zero and sq.excludes_zero else conf_misses).append(text)
    if conf_hits:
        return _Verdict(
            True, "correctness CI includes 0 but confidence-utility CI excludes 0: "
                  + " | ".join(conf_hits), conf_evidence)
    if conf_misses:
        return _Verdict(
            False, "no condition with correctness CI including 0 and confidence-utility CI "
                   "excluding 0: " + " | ".join(conf_misses), conf_evidence)
    return _Verdict(
        None, f"no condition in {list(t.confidence_conditions)} has both "
              f"{CORRECTNESS!r} and {CONF_UTILITY!r} deltas")


def _redundant_verdict(stats: Stats, t: RoleThresholds) -> _Verdict:
    """REMOVE's and DUPLICATE's correctness CIs both ∋ 0, mean D under DUPLICATE small."""
    level = t.ci_level
    rc = stats[REMOVE][CORRECTNESS]
    dc = stats.get(DUPLICATE, {}).get(CORRECTNESS)
    dd = stats.get(DUPLICATE, {}).get(DIVERGENCE)
    if dc is None or dd is None:
        return _Verdict(
            None, f"needs {DUPLICATE}.{CORRECTNESS} and {DUPLICATE}.{DIVERGENCE} deltas")
    holds = (not rc.excludes_zero and not dc.excludes_zero
             and dd.mean < t.redundant_divergence)
    return _Verdict(
        holds,
        f"{_describe(rc, REMOVE, CORRECTNESS, level)}; "
        f"{_describe(dc, DUPLICATE, CORRECTNESS, level)} "
        f"(both must include 0); mean D under {DUPLICATE} {dd.mean:.3f} "
        f"(must be < {t.redundant_divergence:g})",
        {f"{REMOVE}.{CORRECTNESS}": rc.as_dict(), f"{DUPLICATE}.{CORRECTNESS}": dc.as_dict(),
         f"{DUPLICATE}.{DIVERGENCE}": dd.as_dict()})


def dataset_roles(deltas_by_condition: Mapping[str, Mapping[str, ArrayLike]],
                  thresholds: RoleThresholds = RoleThresholds(), *,
                  n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  clusters: Mapping[str, Sequence[str]] | None = None
                  ) -> DatasetRoleVerdicts:
    """Dataset-level role verdicts from per-example delta arrays.

    `deltas_by_condition` maps a condition ("remove", "duplicate", "replace", or any
    other name, reported only) to metric arrays of equal length, keyed "correctness",
    "f1", "conf_utility" (CE_cf − CE), "divergence" (others, e.g. "grounding", are
    reported too). `clusters` (condition → a cluster label per example, e.g. the parent
    example of per-hop questions) makes a condition's intervals the clustered bootstrap,
    as the study's own tables use, so one delta has one interval everywhere.
    REMOVE's "correctness" is required; a verdict whose inputs are
    missing gets ``holds=None``. Criteria: the module docstring's table.

    Returns a JSON-serialisable dict::

        {"primary": str, "labels": [labels that hold, priority order],
         "verdicts": {label: {"holds": bool | None, "reason": str,
                              "evidence": {"<condition>.<metric>": stats}}},
         "conditions": {condition: {metric: stats}},
         "settings": {...}}

    where stats = {"n", "mean", "ci_low", "ci_high"}.
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
    return {
        "primary": labels[0] if labels else NEUTRAL,
        "labels": labels,
        "verdicts": {label: verdicts[label].as_dict() for label in ROLE_PRIORITY},
        "conditions": {cond: {m: s.as_dict() for m, s in per.items()}
                       for cond, per in stats.items()},
        "settings": {"ci_level": level, "n_resamples": n_resamples, "seed": seed,
                     "redundant_divergence": t.redundant_divergence,
                     "confidence_conditions": list(t.confidence_conditions)},
    }

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
"""  # noqa: E501 — markdown table rows (copied into docs/concepts.md) cannot wrap

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike
from pydantic import StrictFloat, StrictInt
from typing_extensions import TypedDict  # typing's TypedDict is no pydantic field on 3.11

from cuer_agent.errors import ConfigError
from cuer_agent.metrics.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    bound_digits,
    cluster_bootstrap_ci,
)

CORRECTIVE = "corrective"
CONSTRUCTIVE = "constructive"
DISTRACTIVE = "distractive"
CONFIDENCE_DISTORTING = "confidence-distorting"
REDUNDANT = "redundant"
NEUTRAL = "neutral"

#: The five roles, highest priority first.
ROLE_PRIORITY: tuple[str, ...] = (
    CORRECTIVE, CONSTRUCTIVE, DISTRACTIVE, CONFIDENCE_DISTORTING, REDUNDANT,
)
#: Every label `item_role` can return, in the fixed order `role_counts` uses.
LABELS: tuple[str, ...] = (*ROLE_PRIORITY, NEUTRAL)

REMOVE = "remove"
DUPLICATE = "duplicate"
REPLACE = "replace"
CONDITIONS: tuple[str, ...] = (REMOVE, DUPLICATE, REPLACE)

#: Metric keys of `dataset_roles` input (per condition); other keys are reported too.
CORRECTNESS = "correctness"
F1 = "f1"
CONF_UTILITY = "conf_utility"
DIVERGENCE = "divergence"

_EPS = 1e-9


def _at_least(value: float, bound: float) -> bool:
    return value >= bound - _EPS


# --------------------------------------------------------------------------- thresholds

@dataclass(frozen=True)
class RoleThresholds:
    """Role thresholds. The paper gives none: these defaults are our config values."""

    hurt_correctness: float = 1.0
    """Δcorrectness at or above which an intervention hurts (at or below minus: helps)."""
    hurt_f1: float = 0.2
    """ΔF1 at or above which an intervention hurts (at or below minus: helps)."""
    redundant_f1: float = 0.05
    """Redundant needs |ΔF1| below this under REMOVE and DUPLICATE."""
    redundant_divergence: float = 0.1
    """Redundant needs D below this (item: REMOVE and DUPLICATE; dataset: mean D under
    DUPLICATE)."""
    confidence_shift: float = 0.1
    """Confidence-distorting needs |Δconfidence-utility| at least this (item level)."""
    confidence_conditions: tuple[str, ...] = CONDITIONS
    """Conditions checked for confidence distortion (item and dataset level)."""
    ci_level: float = 0.95
    """Confidence level of the dataset-level bootstrap CIs."""

    def __post_init__(self) -> None:
        for name in ("hurt_correctness", "hurt_f1", "redundant_f1", "redundant_divergence",
                     "confidence_shift"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"roles.{name} must be a positive number, got {value!r}")
        if not 0.0 < self.ci_level < 1.0:
            raise ConfigError(f"roles.ci_level must be in (0, 1), got {self.ci_level!r}")
        conditions = self.confidence_conditions
        if isinstance(conditions, str):
            conditions = (conditions,)
        conditions = tuple(conditions)
        unknown = [c for c in conditions if c not in CONDITIONS]
        if unknown:
            raise ConfigError(f"roles.confidence_conditions: unknown condition(s) {unknown}; "
                              f"known: {list(CONDITIONS)}")
        object.__setattr__(self, "confidence_conditions", conditions)  # list (TOML) → tuple

    @classmethod
    def overridden(cls, overrides: RoleOverrides) -> RoleThresholds:
        """The defaults with `overrides` (`[cuer.roles]`) applied; a single condition name
        stands for the conditions it names alone."""
        default = cls()
        conditions: Sequence[str] | str = overrides.get("confidence_conditions",
                                                         default.confidence_conditions)
        return cls(
            hurt_correctness=overrides.get("hurt_correctness", default.hurt_correctness),
            hurt_f1=overrides.get("hurt_f1", default.hurt_f1),
            redundant_f1=overrides.get("redundant_f1", default.redundant_f1),
            redundant_divergence=overrides.get("redundant_divergence",
                                               default.redundant_divergence),
            confidence_shift=overrides.get("confidence_shift", default.confidence_shift),
            confidence_conditions=((conditions,) if isinstance(conditions, str)
                                   else tuple(conditions)),
            ci_level=overrides.get("ci_level", default.ci_level))


_Number = StrictInt | StrictFloat | bool
"""A number as written: pydantic converts none (an int stays an int, so a run's
`config.json` records the override as given); `RoleThresholds` checks it."""


class RoleOverrides(TypedDict, total=False):
    """Overrides of `RoleThresholds` fields, as written in `[cuer.roles]`."""

    hurt_correctness: _Number
    hurt_f1: _Number
    redundant_f1: _Number
    redundant_divergence: _Number
    confidence_shift: _Number
    confidence_conditions: list[str] | str
    """A list as TOML and JSON write it (a run's `config.json` is read back strictly)."""
    ci_level: _Number


# --------------------------------------------------------------------------- item level

@dataclass(frozen=True)
class ConditionEffects:
    """Per-example effect of one intervention on the target item.

    Deltas are U(original) − U(counterfactual) (positive = the intervention hurt);
    `d_conf_utility` is therefore CE_cf − CE_orig. `divergence` is D ≥ 0 and
    `answer_changed` compares normalized answers.
    """

    d_correctness: float
    d_f1: float
    d_conf_utility: float
    divergence: float
    answer_changed: bool

    def __post_init__(self) -> None:
        for name in ("d_correctness", "d_f1", "d_conf_utility"):
            value = getattr(self, name)
            if not (math.isfinite(value) and -1.0 - _EPS <= value <= 1.0 + _EPS):
                raise ValueError(f"{name} must be a finite delta in [-1, 1], got {value!r}")
        if not (math.isfinite(self.divergence) and self.divergence >= 0.0):
            raise ValueError(f"divergence must be finite and >= 0, got {self.divergence!r}")

    @classmethod
    def from_outcomes(cls, *, correct: float, correct_cf: float, f1: float, f1_cf: float,
                      confidence_error: float, confidence_error_cf: float, divergence: float,
                      answer_changed: bool) -> ConditionEffects:
        """Build the deltas from original and counterfactual scores with the right signs
        (utility of confidence is −CE, so its delta is CE_cf − CE)."""
        return cls(d_correctness=correct - correct_cf, d_f1=f1 - f1_cf,
                   d_conf_utility=confidence_error_cf - confidence_error,
                   divergence=divergence, answer_changed=answer_changed)


@dataclass(frozen=True)
class ItemEffects:
    """Effects of the conditions run on one example's target item.

    `remove_answer_supported_elsewhere`: the answer given after REMOVE is supported by
    another item still in view (the caller decides how, e.g. the answer occurs in it).
    """

    remove: ConditionEffects
    duplicate: ConditionEffects
    replace: ConditionEffects | None = None
    remove_answer_supported_elsewhere: bool = False

    def conditions(self) -> dict[str, ConditionEffects]:
        """The conditions that were run, by name."""
        out = {REMOVE: self.remove, DUPLICATE: self.duplicate}
        if self.replace is not None:
            out[REPLACE] = self.replace
        return out


def _hurts(effect: ConditionEffects, t: RoleThresholds) -> bool:
    return _at_least(effect.d_correctness, t.hurt_correctness) or _at_least(effect.d_f1, t.hurt_f1)


def _helps(effect: ConditionEffects, t: RoleThresholds) -> bool:
    return (_at_least(-effect.d_correctness, t.hurt_correctness)
            or _at_least(-effect.d_f1, t.hurt_f1))


def _unchanged(effect: ConditionEffects, t: RoleThresholds) -> bool:
    return (abs(effect.d_correctness) <= _EPS and not _at_least(abs(effect.d_f1), t.redundant_f1)
            and not _at_least(effect.divergence, t.redundant_divergence))


def item_roles(effects: ItemEffects,
               thresholds: RoleThresholds = RoleThresholds()) -> tuple[str, ...]:
    """Every role label that applies to the item, highest priority first;
    ``("neutral",)`` when none does. Criteria: the module docstring's table."""
    t = thresholds
    remove = effects.remove
    holds = {
        CORRECTIVE: (_hurts(remove, t) and remove.answer_changed
                     and effects.remove_answer_supported_elsewhere),
        CONSTRUCTIVE: _hurts(remove, t),
        DISTRACTIVE: _helps(remove, t),
        CONFIDENCE_DISTORTING: any(
            not effect.answer_changed and _at_least(abs(effect.d_conf_utility), t.confidence_shift)
            for name, effect in effects.conditions().items() if name in t.confidence_conditions
        ),
        REDUNDANT: _unchanged(remove, t) and _unchanged(effects.duplicate, t),
    }
    labels = tuple(label for label in ROLE_PRIORITY if holds[label])
    return labels or (NEUTRAL,)


def item_role(effects: ItemEffects, thresholds: RoleThresholds = RoleThresholds()) -> str:
    """The one primary label: the highest-priority role that applies, else "neutral".
    Priority: corrective > constructive > distractive > confidence-distorting >
    redundant > neutral."""
    return item_roles(effects, thresholds)[0]


def role_counts(labels: Iterable[str | Iterable[str]]) -> dict[str, int]:
    """Count labels over all of `LABELS` (zeros included, fixed order). An element may be
    one label (from `item_role`) or a collection of labels (from `item_roles`)."""
    counts = dict.fromkeys(LABELS, 0)
    for entry in labels:
        for label in ((entry,) if isinstance(entry, str) else entry):
            if label not in counts:
                raise ValueError(f"unknown role label {label!r}; known: {list(LABELS)}")
            counts[label] += 1
    return counts


# --------------------------------------------------------------------------- dataset level

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

    def stat(cond: str, metric: str) -> _Stat | None:
        return stats.get(cond, {}).get(metric)

    def describe(s: _Stat, cond: str, metric: str) -> str:
        return s.describe(f"Δ{metric} under {cond}", level)

    verdicts: dict[str, _Verdict] = {}
    rc = stats[REMOVE][CORRECTNESS]
    rc_key = f"{REMOVE}.{CORRECTNESS}"
    verdicts[CONSTRUCTIVE] = _Verdict(
        rc.ci_low > 0.0,
        describe(rc, REMOVE, CORRECTNESS) + (" is entirely > 0" if rc.ci_low > 0.0
                                         else " is not entirely > 0"),
        {rc_key: rc.as_dict()})
    verdicts[DISTRACTIVE] = _Verdict(
        rc.ci_high < 0.0,
        describe(rc, REMOVE, CORRECTNESS) + (" is entirely < 0" if rc.ci_high < 0.0
                                         else " is not entirely < 0"),
        {rc_key: rc.as_dict()})
    verdicts[CORRECTIVE] = _Verdict(
        None, "not decided at dataset level: needs the per-item support flag "
              "(use item_roles and role_counts)")

    # confidence-distorting: any checked condition with correctness CI ∋ 0, CE-utility CI ∌ 0
    conf_evidence: Evidence = {}
    conf_hits: list[str] = []
    conf_misses: list[str] = []
    for cond in t.confidence_conditions:
        sc, sq = stat(cond, CORRECTNESS), stat(cond, CONF_UTILITY)
        if sc is None or sq is None:
            continue
        conf_evidence[f"{cond}.{CORRECTNESS}"] = sc.as_dict()
        conf_evidence[f"{cond}.{CONF_UTILITY}"] = sq.as_dict()
        text = f"{describe(sc, cond, CORRECTNESS)}; {describe(sq, cond, CONF_UTILITY)}"
        (conf_hits if not sc.excludes_zero and sq.excludes_zero else conf_misses).append(text)
    if conf_hits:
        verdicts[CONFIDENCE_DISTORTING] = _Verdict(
            True, "correctness CI includes 0 but confidence-utility CI excludes 0: "
                  + " | ".join(conf_hits), conf_evidence)
    elif conf_misses:
        verdicts[CONFIDENCE_DISTORTING] = _Verdict(
            False, "no condition with correctness CI including 0 and confidence-utility CI "
                   "excluding 0: " + " | ".join(conf_misses), conf_evidence)
    else:
        verdicts[CONFIDENCE_DISTORTING] = _Verdict(
            None, f"no condition in {list(t.confidence_conditions)} has both "
                  f"{CORRECTNESS!r} and {CONF_UTILITY!r} deltas")

    dc, dd = stat(DUPLICATE, CORRECTNESS), stat(DUPLICATE, DIVERGENCE)
    if dc is None or dd is None:
        verdicts[REDUNDANT] = _Verdict(
            None, f"needs {DUPLICATE}.{CORRECTNESS} and {DUPLICATE}.{DIVERGENCE} deltas")
    else:
        holds = (not rc.excludes_zero and not dc.excludes_zero
                 and dd.mean < t.redundant_divergence)
        verdicts[REDUNDANT] = _Verdict(
            holds,
            f"{describe(rc, REMOVE, CORRECTNESS)}; {describe(dc, DUPLICATE, CORRECTNESS)} "
            f"(both must include 0); mean D under {DUPLICATE} {dd.mean:.3f} "
            f"(must be < {t.redundant_divergence:g})",
            {rc_key: rc.as_dict(), f"{DUPLICATE}.{CORRECTNESS}": dc.as_dict(),
             f"{DUPLICATE}.{DIVERGENCE}": dd.as_dict()})

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


__all__ = [
    "CONDITIONS", "LABELS", "NEUTRAL", "ROLE_PRIORITY", "ConditionEffects",
    "DatasetRoleVerdicts", "ItemEffects", "RoleOverrides", "RoleThresholds", "dataset_roles",
    "item_role", "item_roles", "role_counts",
]

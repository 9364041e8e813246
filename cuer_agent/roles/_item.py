"""Item-level evidence roles: the effects of the conditions run on one target item and
the labels they earn (`item_roles`, `item_role`), counted with `role_counts`. Criteria
and priority: `cuer_agent.roles`."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from cuer_agent.roles._thresholds import (
    CONFIDENCE_DISTORTING,
    CONSTRUCTIVE,
    CORRECTIVE,
    DISTRACTIVE,
    DUPLICATE,
    LABELS,
    NEUTRAL,
    REDUNDANT,
    REMOVE,
    REPLACE,
    ROLE_PRIORITY,
    RoleThresholds,
)

_EPS = 1e-9


def _at_least(value: float, bound: float) -> bool:
    return value >= bound - _EPS



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


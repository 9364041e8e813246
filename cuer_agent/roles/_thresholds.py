"""The vocabulary of the evidence roles and the thresholds their criteria use.

The role labels (`ROLE_PRIORITY`, highest first, and `LABELS` with "neutral"), the
conditions (`CONDITIONS`), the metric keys of `dataset_roles` input, and
`RoleThresholds` (every number of the criteria, a config value) with its
`[cuer.roles]` overrides (`RoleOverrides`). The criteria themselves: `cuer_agent.roles`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import StrictFloat, StrictInt
from typing_extensions import TypedDict  # typing's TypedDict is no pydantic field on 3.11

from cuer_agent.errors import ConfigError

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
RoleLabel = Literal["corrective", "constructive", "distractive", "confidence-distorting",
                    "redundant", "neutral"]
"""`LABELS` as a type (a summary's labels are validated against it)."""

REMOVE = "remove"
DUPLICATE = "duplicate"
REPLACE = "replace"
CONDITIONS: tuple[str, ...] = (REMOVE, DUPLICATE, REPLACE)

#: Metric keys of `dataset_roles` input (per condition); other keys are reported too.
CORRECTNESS = "correctness"
F1 = "f1"
CONF_UTILITY = "conf_utility"
DIVERGENCE = "divergence"


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


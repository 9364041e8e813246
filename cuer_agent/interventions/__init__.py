"""Interventions: CUE-R evidence operators, target selection, and named conditions.

Public surface: `InterventionRecord` (hidden label), `select_target` / `random_target`,
the operators (`remove`, `replace`, `duplicate`, `ReplacementPool`), and the condition
registry (`condition`, `get_condition`, `condition_names`, `ConditionInput`).
"""

from cuer_agent.interventions._record import InterventionRecord, seeded_rng, stable_seed
from cuer_agent.interventions.conditions import (
    ConditionInput,
    condition,
    condition_names,
    get_condition,
)
from cuer_agent.interventions.operators import (
    HARDNESS,
    POSITIONS,
    ReplacementPool,
    duplicate,
    remove,
    replace,
)
from cuer_agent.interventions.targets import Target, random_target, select_target

__all__ = [
    "HARDNESS",
    "POSITIONS",
    "ConditionInput",
    "InterventionRecord",
    "ReplacementPool",
    "Target",
    "condition",
    "condition_names",
    "duplicate",
    "get_condition",
    "random_target",
    "remove",
    "replace",
    "seeded_rng",
    "select_target",
    "stable_seed",
]

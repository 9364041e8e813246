"""Interventions: CUE-R evidence operators, target selection, and named conditions.

Public surface: `InterventionRecord` (hidden label), `select_target` / `random_target`,
the operators (`remove`, `replace`, `duplicate`, `ReplacementPool`), the condition
registry (`condition`, `get_condition`, `condition_names`, `ConditionInput`) and the
fault registry (`fault`, `get_fault`, `fault_names`, `FaultInput`, `FaultOutcome`,
`FaultSpec`, `CorpusItem`). Both registries are `cuer_agent._registry.Registry`s; the
built-in faults live in their own modules and are imported on the first lookup.
"""

from cuer_agent.interventions._fault_types import (
    FAULTS,
    CorpusItem,
    FaultInput,
    FaultOutcome,
    FaultSpec,
    fault,
    fault_names,
    get_fault,
)
from cuer_agent.interventions._record import InterventionRecord, seeded_rng, stable_seed
from cuer_agent.interventions.conditions import (
    ConditionInput,
    ConditionParams,
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
    "FAULTS",
    "HARDNESS",
    "POSITIONS",
    "ConditionInput",
    "ConditionParams",
    "CorpusItem",
    "FaultInput",
    "FaultOutcome",
    "FaultSpec",
    "InterventionRecord",
    "ReplacementPool",
    "Target",
    "condition",
    "condition_names",
    "duplicate",
    "fault",
    "fault_names",
    "get_condition",
    "get_fault",
    "random_target",
    "remove",
    "replace",
    "seeded_rng",
    "select_target",
    "stable_seed",
]

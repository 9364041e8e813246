"""Fault diagnosers: one module each, one registry.

Built in: `coverage` (gold-free, Doctor-RAG style), `coverage-gold` (the propagation
study's variant), `llm-judge` and `llm-judge-gold` (the published judge, which sees the
gold answer), `frozen-hop` and `suffix-regen` (counterfactual probes with a gold
oracle) and their gold-free variants `frozen-hop-free` and `suffix-regen-free`,
`cuer-single-shot` (single-shot CUE-R as the baseline diagnoser), and the controls
`rule`, `trace-rule` (what the agent's own trace says), `first-hop`, `last-hop`,
`chance`. Third-party diagnosers
register through the `cuer_agent.diagnosers` entry-point group.
"""

from ._base import (
    ENTRY_POINT_GROUP,
    ENVIRONMENT_CALLS,
    STAGES,
    BaseDiagnoser,
    Diagnoser,
    Diagnosis,
    DiagnosisCost,
    DiagnosisView,
    Probe,
    ProbeBudgetExceeded,
    diagnoser,
    diagnoser_names,
    get_diagnoser,
    make_view,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENVIRONMENT_CALLS",
    "STAGES",
    "BaseDiagnoser",
    "Diagnoser",
    "Diagnosis",
    "DiagnosisCost",
    "DiagnosisView",
    "Probe",
    "ProbeBudgetExceeded",
    "diagnoser",
    "diagnoser_names",
    "get_diagnoser",
    "make_view",
]

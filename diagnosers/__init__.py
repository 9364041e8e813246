"""Fault diagnosers, installed as `cuer_agent.diagnosers`: one module each, one registry.

Built in: `coverage` (gold-free, Doctor-RAG style), `coverage-gold` (the propagation
study's variant), `llm-judge`, `frozen-hop` and `suffix-regen` (counterfactual probes),
and the controls `rule`, `first-hop`, `last-hop`, `chance`. Third-party diagnosers
register through the `cuer_agent.diagnosers` entry-point group.
"""

from cuer_agent.diagnosers._base import (
    ENTRY_POINT_GROUP,
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
)

__all__ = [
    "ENTRY_POINT_GROUP",
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
]

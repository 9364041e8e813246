"""Typed `summary.json` of each study, and the JSON Schemas generated from the models.

* `RunSummary` — `cuer-agent run`;
* `CuerSummary` — `cuer-agent cuer` (and `single_shot/summary.json` of `evaluate`);
* `PropagateSummary` — `cuer-agent propagate`;
* `EvaluateSummary` — `cuer-agent evaluate`: `single_shot` (a CUE-R summary and the kind
  of questions asked), `agentic` (`PropagationResults`), `comparison`, `diagnosers`,
  `ledger`, `config`, `provenance`, `notes`.

The parts are in `summary_cells` and `summary_cells_agentic`; every part forbids unknown
keys, so a renamed key is an error. A study validates its summary through its model
before writing it, and writes the dict it computed: the bytes of `summary.json` do not
depend on the models. `read_summary` reads one back, turning a mismatch into a
`DataError` that names the file and the key.

The JSON Schemas in `docs/schemas/` are generated from these models:
`python -m cuer_agent.experiments.summaries` writes them again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Tag, ValidationError

from cuer_agent._validation import problem
from cuer_agent.config import StudyConfig
from cuer_agent.errors import DataError
from cuer_agent.experiments.cuer import CuerConfig
from cuer_agent.experiments.propagation import PropagationConfig
from cuer_agent.experiments.run_configs import RecordedConfig
from cuer_agent.experiments.summary_cells import (
    Ablations,
    Accuracy,
    CuerCondition,
    GoldHopsAccuracy,
    HopKey,
    Ledger,
    Part,
    Roles,
    RunError,
    absent,
)
from cuer_agent.experiments.summary_cells_agentic import (
    CleanRuns,
    Comparison,
    DiagnoserSummary,
    EvaluateLedger,
    FaultCell,
    HopOperatorCell,
    Invisibility,
    NoProvenance,
    PrefixCalls,
    Provenance,
    ReaderCheck,
    StageTransitions,
    TamperingCell,
    TamperingCertification,
    VerifyRates,
)
from cuer_agent.experiments.trace_labels import TraceLabel
from cuer_agent.interventions.persistence import Persistence

__all__ = ["SCHEMAS", "CuerSummary", "EvaluateSummary", "PropagateSummary",
           "PropagationResults", "RunSummary", "read_summary", "schema_texts",
           "validate_summary", "write_schemas"]

Skipped = dict[str, dict[str, int]]
"""Condition → reason → records skipped for it."""


class RunSummary(Part):
    """`summary.json` of `cuer-agent run`, from its trace rows alone."""

    dataset: str
    """The data set's name."""
    mode: Literal["agentic", "single_shot"]
    """The system that ran."""
    n: int
    """Examples run."""
    accuracy: Accuracy
    accuracy_by_gold_hops: dict[HopKey, GoldHopsAccuracy]
    """Gold hop count → soft accuracy of those examples."""
    hops_used: dict[HopKey, int]
    """Hops taken → examples."""
    status: dict[Literal["ok", "parse_failure", "error"], int]
    """Trace status → examples."""
    errors: list[RunError]
    """The traces that carry an error, in data order."""
    ledger: Ledger


class CuerSummary(Part):
    """`summary.json` of `cuer-agent cuer`, from its record rows alone."""

    n: int
    """Examples (or per-hop questions) whose original ran."""
    conditions: dict[str, CuerCondition]
    """original, remove, replace, duplicate, zero_retrieval, random_target and the
    ablation conditions, in run order."""
    skipped: Skipped
    ablations: Ablations = absent()
    """Present when the config asks for an ablation."""
    findings: list[str]
    """One sentence per main operator: does Δcorrectness follow the paper's pattern? (or
    why the data carry no verdict)."""
    roles: Roles
    ledger: Ledger
    config: CuerConfig
    """The `[cuer]` study config."""


class PropagationResults(Part):
    """The fault-propagation study, from its record and trace rows alone
    (`cuer_agent.experiments.propagation_summary`)."""

    persistence: Persistence
    """How long a fault holds (`query`, `hop` or `once`)."""
    clean: CleanRuns
    faults: dict[str, dict[HopKey, FaultCell]]
    """Fault → injected hop → recovery."""
    tampering: dict[HopKey, TamperingCell]
    """Content tampering per hop."""
    tampering_certification: TamperingCertification
    hop_operators: dict[str, dict[HopKey, HopOperatorCell]]
    """remove / replace / duplicate → hop → effect (empty when not run)."""
    skipped: Skipped
    prefix_calls: PrefixCalls
    stage_transitions: dict[str, StageTransitions]
    """Fault → how its failed injections show downstream."""


class PropagateSummary(PropagationResults):
    """`summary.json` of `cuer-agent propagate`."""

    verify: VerifyRates
    invisibility: Invisibility
    ledger: Ledger
    config: PropagationConfig
    """The propagation study config."""


class SingleShot(CuerSummary):
    """The single-shot CUE-R baseline of `evaluate`."""

    questions: Literal["per_hop", "whole"]
    """What the single-shot system was asked: each hop's sub-question, or the whole
    question."""


class Caveat(Part):
    """One caveat, said once."""

    text: str
    concerns: list[str]
    """The diagnosers or faults it is about."""
    impact: float
    """How far it moves a number of the headline table (0–1; 0: none of them)."""


class EvaluateSummary(Part):
    """`summary.json` of `cuer-agent evaluate`; the report is built from it alone."""

    single_shot: SingleShot
    agentic: PropagationResults
    verify: VerifyRates
    invisibility: Invisibility
    reader: ReaderCheck
    comparison: Comparison
    diagnosers: dict[str, DiagnoserSummary]
    """Diagnoser name → its summary."""
    ledger: EvaluateLedger
    config: StudyConfig
    """The whole study config (the run's `config.json`)."""
    provenance: Annotated[Annotated[Provenance, Tag("Provenance")]
                          | Annotated[NoProvenance, Tag("NoProvenance")],
                          Discriminator(lambda v: "NoProvenance" if v == {} else "Provenance")]
    caveats: list[Caveat]
    """Caveats a reader needs before quoting a number, derived from the results, ranked
    by their impact on the headline table (`evaluate_notes`)."""


SCHEMAS: dict[str, type[BaseModel]] = {
    "config.schema.json": RecordedConfig,
    "run-summary.schema.json": RunSummary,
    "cuer-summary.schema.json": CuerSummary,
    "propagate-summary.schema.json": PropagateSummary,
    "evaluate-summary.schema.json": EvaluateSummary,
    "labels.schema.json": TraceLabel,
}
"""Schema file name (in `docs/schemas/`) → the model it is generated from: a run's
`config.json` (`run_configs`), each study's `summary.json`, and the labels file of
`diagnose --labels` (one object per line)."""

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def _one_line(node: Any) -> Any:
    """A schema with each description on one line (docstrings wrap)."""
    if isinstance(node, dict):
        return {k: " ".join(v.split()) if k == "description" and isinstance(v, str)
                else _one_line(v) for k, v in node.items()}
    return [_one_line(v) for v in node] if isinstance(node, list) else node


def schema_texts() -> dict[str, str]:
    """Schema file name → its text, generated from the models."""
    out = {}
    for name, model in SCHEMAS.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                  **_one_line(model.model_json_schema())}
        out[name] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every schema into `directory`; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in schema_texts().items():
        (directory / name).write_text(text, encoding="utf-8")
        paths.append(directory / name)
    return paths


def validate_summary(summary: Any, model: type[Part], path: object) -> Part:
    """`model` of `summary`, or a `DataError` naming `path` and the first bad key."""
    try:
        return model.model_validate(summary)
    except ValidationError as exc:
        raise DataError(path, f"{problem(exc, summary)} (schema: {model.__name__})"
                        ) from None


def read_summary(path: Path, model: type[Part]) -> dict[str, Any]:
    """A `summary.json` as written, once it validates through `model` (else a
    `DataError` naming the file, and the line or key)."""
    if not path.exists():
        raise DataError(path, "no such file")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None
    if not isinstance(summary, dict):
        raise DataError(path, "expected a JSON object")
    validate_summary(summary, model, path)
    return summary


def main(argv: list[str] | None = None) -> None:
    """`python -m cuer_agent.experiments.summaries [DIR]`: write the JSON Schemas."""
    args = sys.argv[1:] if argv is None else argv
    for path in write_schemas(Path(args[0]) if args else SCHEMA_DIR):
        print(path)


if __name__ == "__main__":
    main()

"""Typed `summary.json` of each study, and the JSON Schemas generated from the models.

* `RunSummary` — `cuer-agent run`;
* `CuerSummary` — `cuer-agent cuer` (and `single_shot/summary.json` of `evaluate`);
* `PropagateSummary` — `cuer-agent propagate`;
* `EvaluateSummary` — `cuer-agent evaluate`: `single_shot` (a CUE-R summary and the kind
  of questions asked), `agentic` (`PropagationResults`), `comparison`, `diagnosers`,
  `ledger`, `config`, `provenance`, `caveats`;
* `TracesSummary` — `cuer-agent diagnose --traces` (any agent's traces);
* `StepTracesSummary` — `cuer-agent diagnose --format whowhen|agentrx` (step diagnosers
  on failure logs, per source and pooled).

Each model and its parts live in its study's room (`studies/<study>/summary_model.py`; the shared
parts and `RunSummary` in `studies/_common/summary_model.py`); every part forbids unknown
keys, so a renamed key is an error. Every study builds its summary as its model and
writes it (`RunDir.write_model`: the keys it was given, by their JSON names), then hands
the model on to what prints or reports it.
`read_summary` reads one back as its model, turning a mismatch into a `DataError` that
names the file and the key.

The JSON Schemas in `docs/schemas/` are generated from these models:
`python -m cuer_agent.studies.schemas` writes them again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cuer_agent._part import Part
from cuer_agent._validation import problem
from cuer_agent.errors import DataError
from cuer_agent.studies._common.recorded_config import RecordedConfig
from cuer_agent.studies._common.summary_model import RunSummary
from cuer_agent.studies.cuer.summary_model import CuerSummary
from cuer_agent.studies.diagnose.labels import TraceLabel
from cuer_agent.studies.diagnose.steps_model import StepTracesSummary
from cuer_agent.studies.diagnose.summary_model import TracesSummary
from cuer_agent.studies.evaluate.summary_model import EvaluateSummary
from cuer_agent.studies.propagation.summary_model import (
    PropagateSummary,
    PropagationResults,
)

__all__ = ["SCHEMAS", "CuerSummary", "EvaluateSummary", "PropagateSummary",
           "PropagationResults", "RunSummary", "read_summary", "schema_texts",
           "validate_summary", "write_schemas"]

P = TypeVar("P", bound=Part)
"""A summary model (or any part of one)."""

SCHEMAS: dict[str, type[BaseModel]] = {
    "config.schema.json": RecordedConfig,
    "run-summary.schema.json": RunSummary,
    "cuer-summary.schema.json": CuerSummary,
    "propagate-summary.schema.json": PropagateSummary,
    "evaluate-summary.schema.json": EvaluateSummary,
    "labels.schema.json": TraceLabel,
    "step-traces-summary.schema.json": StepTracesSummary,
    "traces-summary.schema.json": TracesSummary,
}
"""Schema file name (in `docs/schemas/`) → the model it is generated from: a run's
`config.json` (`recorded_config`), each study's `summary.json`, and the labels file of
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


def validate_summary(summary: Any, model: type[P], path: object) -> P:
    """`model` of `summary`, or a `DataError` naming `path` and the first bad key."""
    try:
        return model.model_validate(summary)
    except ValidationError as exc:
        raise DataError(path, f"{problem(exc, summary)} (schema: {model.__name__})"
                        ) from None


def read_summary(path: Path, model: type[P]) -> P:
    """A `summary.json` as its `model` (else a `DataError` naming the file, and the line
    or key)."""
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
    return validate_summary(summary, model, path)


def main(argv: list[str] | None = None) -> None:
    """`python -m cuer_agent.studies.schemas [DIR]`: write the JSON Schemas."""
    args = sys.argv[1:] if argv is None else argv
    for path in write_schemas(Path(args[0]) if args else SCHEMA_DIR):
        print(path)


if __name__ == "__main__":
    main()

"""`Part`, the base of every model a run directory holds (`summary.json` and its parts,
the provenance, the dataset-level role verdicts), and `absent()` for a key written only
sometimes.

Declared here, below every layer, so that the function computing a part (a metric, a
verdict, a provenance) returns the very model the summary holds: one shape is declared
once (docs/development.md, "Which data idiom goes where").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict


class Part(BaseModel):
    """A part of a summary: unknown keys are errors; field docstrings document it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _no_default(schema: JsonDict) -> None:
    schema.pop("default", None)


def absent() -> Any:
    """A key written only in some runs: optional, but never null when present."""
    return Field(None, json_schema_extra=_no_default)

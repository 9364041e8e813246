"""Labels for `cuer-agent diagnose --traces FILE --labels LABELS`: where each of *your*
traces went wrong, as you (or your annotators) judged it — the truth diagnosers are
scored against. They are read for scoring only; no diagnoser ever sees them.

A labels file is JSON Lines, one object per trace (schema: `docs/schemas/labels.schema.json`):

    {"trace_id": "5f0c…", "outcome": "failed", "hop": 2, "stage": "retrieval"}
    {"trace_id": "a41e…", "outcome": "correct"}

* `trace_id` — the trace's id in the traces file: the OpenTelemetry trace id for
  OpenInference spans (hex, as exported), the record id (else the example id) for cuer
  traces; the example id of a trace is accepted too;
* `outcome` — `correct` or `failed`;
* `hop` — for a failed trace, the hop where the failure started: 1..n a hop of the
  trace, 0 the answer step (every hop was fine), n+1 the agent stopped too early;
* `stage` — for a failed trace: `retrieval` (what the hop needed was not retrieved),
  `read` (it was in view, the hop read it wrong), `tool` (the query went wrong) or
  `answer`;
* `fault` — optional: a name for the kind of failure (tables group by it);
* `rule` — optional: the labelling rule and version that made the label (natural
  failures: `gold-chain-walk@2`, `cuer_agent.studies.natural.rule`); absent for labels
  made by hand;
* `why` — optional: one line on how the label was decided;
* `hop_verdicts` — optional, failed traces: a verdict for every hop of the trace, in
  order, `{"hop": 1, "right": false, "step": 1, "stage": "read"}` (`step`: the gold step
  the hop resolved or left open; `stage`: a wrong hop's, retrieval or read). With them a
  diagnoser is also scored by whether it names *a* wrong hop, and a failure with two or
  more wrong hops counts as a cascade.

A failed trace without `hop` and `stage`, a correct one with them, a duplicate
`trace_id`, or an unknown key is an error naming the file and record (the n-th label).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cuer_agent._validation import problem
from cuer_agent.errors import DataError
from cuer_agent.run_dir import scan_rows

LABELLED = "labelled"
"""The `fault` of a failed trace whose label names none."""


class TraceLabel(BaseModel):
    """One trace's label: its outcome and, when it failed, where the failure started."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={
                                  "if": {"properties": {"outcome": {"const": "failed"}}},
                                  "then": {"required": ["hop", "stage"],
                                           "properties": {"hop": {"type": "integer"},
                                                          "stage": {"type": "string"}}},
                                  "else": {"properties": {"hop": {"type": "null"},
                                                          "stage": {"type": "null"}}}})

    trace_id: str = Field(min_length=1)
    """The trace's id in the traces file (OpenInference: the trace id; cuer: the record
    id), or its example id."""
    outcome: Literal["correct", "failed"]
    """Was the trace's final answer right?"""
    hop: int | None = Field(None, ge=0)
    """Failed traces only: the first-error hop — 1..n a hop of the trace, 0 the answer
    step, n+1 the agent stopped too early."""
    stage: Literal["retrieval", "read", "tool", "answer"] | None = None
    """Failed traces only: the stage where the failure started."""
    fault: str | None = Field(None, min_length=1)
    """Optional name of the kind of failure (tables group by it)."""
    rule: str | None = Field(None, min_length=1)
    """The labelling rule and version that made the label (absent: labelled by hand)."""
    why: str | None = None
    """One line on how the label was decided."""
    hop_verdicts: list[HopVerdictLabel] | None = None
    """Failed traces, optional: every hop's verdict, in hop order."""

    def wrong_hops(self) -> list[int] | None:
        """Where a failed trace went wrong: its wrong hops and the first-error hop (which
        may be the answer step 0 or a stop n+1), sorted; None without `hop_verdicts`."""
        if self.hop_verdicts is None or self.hop is None:
            return None
        return sorted({v.hop for v in self.hop_verdicts if not v.right} | {self.hop})

    @model_validator(mode="after")
    def _hop_with_failure(self) -> TraceLabel:
        failed = self.outcome == "failed"
        if failed and (self.hop is None or self.stage is None):
            raise ValueError("a failed trace needs 'hop' and 'stage'")
        if not failed and (self.hop is not None or self.stage is not None):
            raise ValueError("a correct trace has no 'hop' or 'stage'")
        if self.hop_verdicts is not None:
            if not failed:
                raise ValueError("a correct trace has no 'hop_verdicts'")
            if [v.hop for v in self.hop_verdicts] != list(range(1, len(self.hop_verdicts) + 1)):
                raise ValueError("'hop_verdicts' must give hops 1..n in order")
        return self


class HopVerdictLabel(BaseModel):
    """One hop's verdict in a label (`cuer_agent.studies.natural.rule.HopVerdict`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    hop: int = Field(ge=1)
    right: bool
    """The hop resolved a gold step (or came after every step was resolved)."""
    step: int | None = Field(None, ge=1)
    """The gold step it resolved (right) or left open (wrong)."""
    stage: Literal["retrieval", "read"] | None = None
    """A wrong hop's stage, when known."""


def read_labels(path: Path) -> dict[str, TraceLabel]:
    """trace id → label; a bad line is a `DataError` naming the file and line."""
    if not path.is_file():
        raise DataError(path, "no such file")
    labels: dict[str, TraceLabel] = {}
    for record, row in enumerate(scan_rows(path), start=1):
        try:
            made = TraceLabel.model_validate(row)
        except ValidationError as exc:
            raise DataError(path, problem(exc, row), record=record) from None
        if made.trace_id in labels:
            raise DataError(path, f"trace {made.trace_id!r} is labelled twice", record=record)
        labels[made.trace_id] = made
    if not labels:
        raise DataError(path, "no labels")
    return labels

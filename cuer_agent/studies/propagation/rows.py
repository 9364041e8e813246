"""The rows of a propagation run directory, typed: what `example_rows` makes
(`ForkRow`), and what the summaries read back from `records.jsonl` (`RecordRow`) and
`traces.jsonl` (`TraceRow`).

Rows read from a run directory are JSON objects (`RunDir.rows`); `record_rows` and
`trace_rows` validate them into these shapes where they are read, so the summaries
index typed rows. A key the summaries do not read is not declared and not kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NotRequired

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from cuer_agent._json import JsonRow
from cuer_agent.execution import Spent
from cuer_agent.run_dir import checked_rows
from cuer_agent.studies._common.records import RecordData
from cuer_agent.trace import HopData


class ForkMetrics(TypedDict):
    """The metrics of one run (`run_metrics`), and what a fork adds to them."""

    correct: float
    """1.0 when the answer is correct (normalised EM, or recall >= the threshold)."""
    grounding: float
    confidence_error: float
    hops: float
    """Hops taken."""
    divergence_cuer: float
    """The plain CUE-R D from the clean run."""
    divergence: float
    """The multi-hop D from the clean run."""
    prefix_calls: NotRequired[float]
    """Skill calls spent on the prefix the fork shares with the clean run (must be 0)."""
    effective: NotRequired[float]
    """1.0 when the injection changed hop h's first attempt."""
    retried: NotRequired[float]
    """1.0 when the agent retried hop h."""
    verify_fired: NotRequired[float]
    """1.0 when VERIFY flagged hop h's faulted first attempt."""
    first_hit: NotRequired[float]
    """The hop at which the fault first reached the agent; -1.0: never."""
    control_correct: NotRequired[float]
    """Correctness of the same injection with the agent's retries off."""
    control_same_run: NotRequired[float]
    """1.0 when the control is the run itself (it never retried)."""


class ForkRow(TypedDict):
    """One row of `example_rows`: the clean run, a fault × hop, or a hop operator. Its
    trace and what the run spent go to `traces.jsonl`, the rest to `records.jsonl`."""

    record: RecordData
    trace: JsonRow | None
    """The run's trace as JSON (`Trace.model_dump(mode="json")`); None when skipped or
    not applied."""
    metrics: ForkMetrics | None
    """None when skipped or not applied."""
    status: NotRequired[str]
    """How the run ended: ok, parse_failure or error."""
    request_keys: NotRequired[list[str]]
    spent: NotRequired[Spent]
    verify: NotRequired[list[bool]]
    """The clean run's: VERIFY's verdict on each hop's first attempt."""
    tampering: NotRequired[str]
    """Content tampering: resisted, absorbed or derailed."""
    contaminated: NotRequired[bool]
    """Content tampering: later sub-queries carry the corrupted span."""
    diagnoses: NotRequired[list[JsonRow]]
    """The `on_failed` hook's diagnosis rows (they go to `diagnoses.jsonl`)."""


class RecordRow(TypedDict):
    """A row of `records.jsonl`, as the summaries read it."""

    record: RecordData
    metrics: ForkMetrics | None
    status: NotRequired[str]
    verify: NotRequired[list[bool]]
    tampering: NotRequired[str]
    contaminated: NotRequired[bool]


class TraceData(TypedDict):
    """What the summaries read of a trace as JSON."""

    example_id: str
    hops: list[HopData]


class TraceRow(TypedDict):
    """A row of `traces.jsonl`, as the summaries read it."""

    record: RecordData
    trace: TraceData


_RECORD_ROWS = TypeAdapter(list[RecordRow])
_TRACE_ROWS = TypeAdapter(list[TraceRow])


def record_rows(rows: Iterable[JsonRow], source: str | Path) -> list[RecordRow]:
    """Rows of `records.jsonl` as read from `source` (`RunDir.rows`), validated
    (`cuer_agent.run_dir.checked_rows`: a row of another shape is a `DataError`)."""
    return checked_rows(rows, _RECORD_ROWS, source)


def trace_rows(rows: Iterable[JsonRow], source: str | Path) -> list[TraceRow]:
    """Rows of `traces.jsonl` as read from `source` (`RunDir.rows`), validated
    (`cuer_agent.run_dir.checked_rows`: a row of another shape is a `DataError`)."""
    return checked_rows(rows, _TRACE_ROWS, source)

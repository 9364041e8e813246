"""An intervention record as the studies' run directories hold it: the `record` of every
row of `records.jsonl` and `traces.jsonl` (CUE-R and propagation)."""

from __future__ import annotations

from typing import NotRequired

from pydantic import ConfigDict, JsonValue, TypeAdapter, with_config
from typing_extensions import TypedDict

from cuer_agent.interventions import InterventionRecord


@with_config(ConfigDict(extra="forbid"))  # a key InterventionRecord gains must be declared
class RecordData(TypedDict):
    """An intervention record as JSON (`InterventionRecord.model_dump(mode="json")`), or
    the short record of a clean, skipped or closing row (its ids and condition)."""

    record_id: str
    example_id: str
    condition: str
    operator: NotRequired[str]
    hop: NotRequired[int]
    target_ids: NotRequired[list[str]]
    target_titles: NotRequired[list[str]]
    target_rule: NotRequired[str]
    new_ids: NotRequired[list[str]]
    provenance: NotRequired[dict[str, str]]
    params: NotRequired[dict[str, JsonValue]]
    certificate: NotRequired[dict[str, JsonValue]]
    skipped: NotRequired[str]


_RECORD = TypeAdapter(RecordData)


def record_data(record: InterventionRecord) -> RecordData:
    """`record` as a row holds it (every field, JSON values)."""
    return _RECORD.validate_python(record.model_dump(mode="json"))

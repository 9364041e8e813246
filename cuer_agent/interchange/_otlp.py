"""OTLP/JSON primitives: attribute values, ids, span kinds, and reading request files.

The OTLP/JSON rules (opentelemetry-proto, "JSON Protobuf Encoding"): lowerCamelCase keys;
`traceId` 32 and `spanId` 16 hex characters; enums as integers; 64-bit integers
(`startTimeUnixNano`, `intValue`) as decimal strings. protobuf's own JSON printer
(`json_format.MessageToJson`) differs in two ways an importer must accept: ids are base64
and enums are names (`"SPAN_KIND_INTERNAL"`). `read_spans` accepts both forms.

`Span` is the flattened span an importer works with: hex ids, integer times, attributes
as a plain dict (`arrayValue` → list, `kvlistValue` → dict).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonObject
from cuer_agent.errors import DataError

SPAN_KIND_INTERNAL = 1
STATUS_OK = 1
STATUS_ERROR = 2
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


# ------------------------------------------------------------------------------ writing

def attribute(key: str, value: Any) -> JsonObject:
    """One OTLP/JSON attribute. bool before int (a bool is an int in Python); ints as
    decimal strings; lists as `arrayValue`."""
    return {"key": key, "value": any_value(value)}


def any_value(value: Any) -> JsonObject:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def hex_to_base64(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def to_protobuf_json(request: JsonObject) -> JsonObject:
    """The same request with base64 ids, as protobuf's JSON parser expects them (the one
    deviation of OTLP/JSON from the protobuf JSON mapping)."""
    out: JsonObject = json.loads(json.dumps(request))
    for resource in out.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = hex_to_base64(span[key])
    return out


# ------------------------------------------------------------------------------ reading

@dataclass
class Span:
    """One span, flattened: hex ids, integer times, attributes as a plain dict."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int
    end: int
    attributes: JsonObject = field(default_factory=dict)
    status_code: int = 0
    status_message: str = ""
    resource: JsonObject = field(default_factory=dict)
    order: int = 0
    """Position in the file (ties in start time keep file order)."""

    @property
    def kind(self) -> str:
        """The OpenInference span kind, upper-case ("" when the span has none)."""
        return str(self.attributes.get("openinference.span.kind", "")).upper()

    def json_attribute(self, key: str) -> Any:
        """An attribute holding a JSON string (`metadata`, document metadata), parsed;
        {} when absent or not JSON."""
        raw = self.attributes.get(key)
        if not isinstance(raw, str):
            return raw if raw is not None else {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return {}


def _value(v: JsonObject) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {}))
                for kv in v["kvlistValue"].get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(items: list[JsonObject]) -> JsonObject:
    return {a["key"]: _value(a.get("value", {})) for a in items}


def _hex_id(value: str, size: int) -> str:
    """An id as lower-case hex: OTLP/JSON writes hex, protobuf's printer base64."""
    if not value:
        return ""
    if len(value) == 2 * size:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"id {value!r} is neither {2 * size} hex characters nor "
                         "base64") from None
    if len(raw) != size:
        raise ValueError(f"id {value!r} decodes to {len(raw)} bytes, not {size}")
    return raw.hex()


def _status(span: JsonObject) -> tuple[int, str]:
    status = span.get("status") or {}
    code = status.get("code", 0)
    if isinstance(code, str):
        code = _STATUS_NAMES.get(code, 0)
    return int(code), str(status.get("message", ""))


GZIP_MAGIC = b"\x1f\x8b"


def span_file_text(path: Path) -> str:
    """The text of a span file, gunzipped when it is gzip (a `.jsonl.gz` kept as
    benchmark data): recognised by its bytes, whatever its name."""
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DataError(path, f"a damaged gzip file ({exc})") from None
    return raw.decode("utf-8")


def _requests(path: Path) -> Iterator[tuple[int, JsonObject]]:
    """(line number, request) per line; a file holding one pretty-printed request is read
    whole; a gzip file is read through."""
    try:
        text = span_file_text(path)
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text (byte {exc.start}): not an OTLP/JSON file"
                        ) from None
    if not text.strip():
        raise DataError(path, "empty file: no spans")
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    try:
        json.loads(first)
    except json.JSONDecodeError:
        try:
            yield 1, json.loads(text)
            return
        except json.JSONDecodeError as exc:
            raise DataError(path, f"not JSON Lines nor one JSON document ({exc.msg})",
                            line=exc.lineno) from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"not JSON ({exc.msg})", line=lineno) from None
        if not isinstance(request, dict) or "resourceSpans" not in request:
            raise DataError(path, "not an ExportTraceServiceRequest (no resourceSpans)",
                            line=lineno)
        yield lineno, request


def read_spans(path: str | Path) -> list[Span]:
    """Every span of an OTLP/JSON file (one ExportTraceServiceRequest per line), hex or
    base64 ids. A malformed line or span raises `DataError` naming the file and line."""
    path = Path(path)
    if path.is_dir():
        raise DataError(path, "a directory, not a spans file")
    if not path.is_file():
        raise DataError(path, "no such file")
    spans: list[Span] = []
    for lineno, request in _requests(path):
        try:
            for resource in request.get("resourceSpans") or []:
                res = attributes((resource.get("resource") or {}).get("attributes", []))
                for scope in resource.get("scopeSpans") or []:
                    for raw in scope.get("spans") or []:
                        code, message = _status(raw)
                        spans.append(Span(
                            trace_id=_hex_id(raw.get("traceId", ""), 16),
                            span_id=_hex_id(raw.get("spanId", ""), 8),
                            parent_id=_hex_id(raw.get("parentSpanId", ""), 8),
                            name=str(raw.get("name", "")),
                            start=int(raw.get("startTimeUnixNano", 0)),
                            end=int(raw.get("endTimeUnixNano", 0)),
                            attributes=attributes(raw.get("attributes", [])),
                            status_code=code, status_message=message, resource=res,
                            order=len(spans)))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise DataError(path, f"malformed span ({exc})", line=lineno) from None
    if not spans:
        raise DataError(path, "no spans in this file (resourceSpans hold none)")
    for span in spans:
        if not span.trace_id or not span.span_id:
            raise DataError(path, f"span {span.name!r} has no traceId or spanId")
    return spans

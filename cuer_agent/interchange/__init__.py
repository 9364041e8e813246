"""Trace interchange: our runs out as OpenInference spans, anyone's spans in as traces.

Public surface:

* `export_run(run_dir, out)`, `run_requests(run_dir)`, `trace_request(trace, trace_id)` —
  OTLP/JSON export (`export`); `send(requests, endpoint)` — POST to an OTLP/HTTP
  collector.
* `read_spans(path)` — OTLP/JSON files, hex or base64 ids (`_otlp`);
  `import_spans(spans)` → (`ImportedTrace`s, `Unmapped` spans) (`importer`).
* `to_protobuf_json(request)` — the request with base64 ids, for protobuf's parser.

Format notes: `../shared/docs/interchange.md`; the span ↔ trace mapping is in the
docstrings of `export` and `importer`.
"""

from cuer_agent.interchange._otlp import Span, read_spans, to_protobuf_json
from cuer_agent.interchange.export import export_run, run_requests, send, trace_request
from cuer_agent.interchange.importer import ImportedTrace, Unmapped, import_spans

__all__ = ["ImportedTrace", "Span", "Unmapped", "export_run", "import_spans", "read_spans",
           "run_requests", "send", "to_protobuf_json", "trace_request"]

"""Export a run directory's traces as OpenInference spans in OTLP/JSON.

One `ExportTraceServiceRequest` per trace, one per line (the OTel file exporter's JSON
Lines). For each stored trace (clean runs and forks; probe re-executions are not stored
in a run directory, so they are not exported):

* an **AGENT** root span: `input.value` = the question, `output.value` = the answer; the
  run's token totals as `llm.token_count.{prompt,completion,total}` (a trace records
  totals, not per call); `metadata` = {"cuer.trace": the trace's other top-level fields,
  "cuer.study": which study wrote it, "cuer.record": its intervention record,
  "cuer.metrics": its metrics}; the study's diagnoses of this run as
  `evaluations.<i>.evaluation.{name, score, label, explanation}` (score = the hop named);
* a **CHAIN** span per node visit, consecutive steps grouped by the node that emits
  them (PLAN → plan, RETRIEVE → retrieve, SELECT/INFER/VERIFY → read, ANSWER → answer),
  with the steps in `metadata` ("cuer.steps");
* under each retrieve visit, a **RETRIEVER** span: `input.value` = the sub-query,
  `retrieval.documents.<i>.document.{id, content, score, metadata}` (metadata: title,
  rank), and the rest of the hop attempt in `metadata` ("cuer.attempt");
* under each read visit (one per reader call, retries included), an **LLM** span:
  `llm.model_name`; in, the sub-query and the evidence shown (`input.value`: JSON
  {subquery, evidence: [{id, title, text}]}; the user message: the sub-query, then each
  passage); out, the finding and the support (`output.value`: JSON {finding, support,
  selected}; the assistant message: the finding);
* under each answer visit, an **LLM** span: the question in, the answer out.

The `cuer.*` metadata lets `cuer-agent diagnose` rebuild the exact trace; other tools read
the standard attributes. The record and metrics are labels: the importer reads them only
to score diagnosers, never into a diagnoser's view.

Determinism: trace ids hash (the run's config, study, record id); span ids hash (trace id,
span index); span times are logical — 1 µs per span boundary from 2026-01-01T00:00Z —
because traces keep no timings. A re-export gives the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cuer_agent._json import JsonObject
from cuer_agent.errors import CuerError
from cuer_agent.interchange._otlp import (
    SPAN_KIND_INTERNAL,
    STATUS_ERROR,
    STATUS_OK,
    attribute,
)
from cuer_agent.run_dir import canonical_json, scan_rows
from cuer_agent.trace import Action, HopAttempt, Step, Trace

SERVICE_NAME = "cuer-agent"
SCOPE = "cuer_agent.interchange"
EPOCH_NS = 1_767_225_600_000_000_000
"""2026-01-01T00:00:00Z: where the logical span clock starts."""
NODE_OF = {Action.PLAN: "plan", Action.RETRIEVE: "retrieve", Action.SELECT: "read",
           Action.VERIFY: "read", Action.INFER: "read", Action.ANSWER: "answer"}


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()


@dataclass
class _Builder:
    """Spans of one trace, in creation order, on a logical clock."""

    trace_id: str
    spans: list[JsonObject] = field(default_factory=list)
    clock: int = 0

    def tick(self) -> str:
        self.clock += 1
        return str(EPOCH_NS + 1000 * self.clock)

    def open(self, name: str, kind: str, parent: str,
             attrs: list[JsonObject]) -> JsonObject:
        span = {"traceId": self.trace_id, "spanId": _digest(self.trace_id, len(self.spans))[:16],
                "name": name, "kind": SPAN_KIND_INTERNAL, "startTimeUnixNano": self.tick(),
                "attributes": [attribute("openinference.span.kind", kind), *attrs],
                "status": {"code": STATUS_OK}}
        if parent:
            span["parentSpanId"] = parent
        self.spans.append(span)
        return span

    def close(self, span: JsonObject) -> None:
        span["endTimeUnixNano"] = self.tick()


def _retriever_attrs(attempt: HopAttempt) -> list[JsonObject]:
    attrs = [attribute("input.value", attempt.subquery)]
    for i, ev in enumerate(attempt.retrieved):
        prefix = f"retrieval.documents.{i}.document"
        attrs += [attribute(f"{prefix}.id", ev.id), attribute(f"{prefix}.content", ev.text),
                  attribute(f"{prefix}.score", float(ev.score)),
                  attribute(f"{prefix}.metadata", canonical_json({"rank": ev.rank,
                                                             "title": ev.title}))]
    rest = attempt.model_dump(mode="json", exclude={"subquery", "retrieved", "attempts"})
    return [*attrs, attribute("metadata", canonical_json({"cuer.attempt": rest}))]


def _llm_attrs(model: str, prompt: str, reply: str, *, value_in: str | None = None,
               value_out: str | None = None) -> list[JsonObject]:
    return [attribute("llm.model_name", model),
            attribute("input.value", prompt if value_in is None else value_in),
            attribute("output.value", reply if value_out is None else value_out),
            attribute("llm.input_messages.0.message.role", "user"),
            attribute("llm.input_messages.0.message.content", prompt),
            attribute("llm.output_messages.0.message.role", "assistant"),
            attribute("llm.output_messages.0.message.content", reply)]


def _reader_attrs(model: str, attempt: HopAttempt) -> list[JsonObject]:
    """A reader call: the sub-query and the evidence in, the finding and support out."""
    evidence = [{"id": ev.id, "title": ev.title, "text": ev.text} for ev in attempt.retrieved]
    prompt = "\n\n".join([attempt.subquery, *(f"[{ev.id}] {ev.title}: {ev.text}"
                                              for ev in attempt.retrieved)])
    return _llm_attrs(model, prompt, attempt.finding,
                      value_in=canonical_json({"subquery": attempt.subquery,
                                               "evidence": evidence}),
                      value_out=canonical_json({"finding": attempt.finding,
                                                "support": attempt.support,
                                                "selected": list(attempt.selected)}))


def _groups(steps: tuple[Step, ...]) -> Iterator[list[Step]]:
    """Consecutive steps of one node visit (same node, hop and attempt)."""
    group: list[Step] = []
    for step in steps:
        if group and (NODE_OF[step.action], step.hop, step.attempt) != (
                NODE_OF[group[0].action], group[0].hop, group[0].attempt):
            yield group
            group = []
        group.append(step)
    if group:
        yield group


def _evaluations(diagnoses: list[JsonObject]) -> list[JsonObject]:
    attrs = []
    for i, d in enumerate(diagnoses):
        prefix = f"evaluations.{i}.evaluation"
        if d.get("pred_hop") is None:
            attrs += [attribute(f"{prefix}.name", d["diagnoser"]),
                      attribute(f"{prefix}.label", "error"),
                      attribute(f"{prefix}.explanation", d.get("error", ""))]
            continue
        attrs += [attribute(f"{prefix}.name", d["diagnoser"]),
                  attribute(f"{prefix}.score", float(d["pred_hop"])),
                  attribute(f"{prefix}.label", f"hop {d['pred_hop']} {d['pred_stage']}"),
                  attribute(f"{prefix}.explanation", d.get("cause", ""))]
    return attrs


def trace_request(trace: Trace, trace_id: str, *, study: str = "",
                  record: JsonObject | None = None, metrics: JsonObject | None = None,
                  diagnoses: list[JsonObject] | None = None) -> JsonObject:
    """One trace as an ExportTraceServiceRequest (OTLP/JSON, hex ids)."""
    b = _Builder(trace_id)
    top = trace.model_dump(mode="json", exclude={"question", "answer", "steps", "hops"})
    metadata = {"cuer.trace": top, "cuer.study": study,
                **({"cuer.record": record} if record else {}),
                **({"cuer.metrics": metrics} if metrics else {})}
    cost = trace.cost
    root = b.open(f"cuer-agent {trace.mode}", "AGENT", "", [
        attribute("agent.name", SERVICE_NAME),
        attribute("input.value", trace.question), attribute("output.value", trace.answer),
        attribute("llm.token_count.prompt", cost.prompt_tokens),
        attribute("llm.token_count.completion", cost.completion_tokens),
        attribute("llm.token_count.total", cost.prompt_tokens + cost.completion_tokens),
        attribute("metadata", canonical_json(metadata)), *_evaluations(diagnoses or [])])
    if trace.status == "error":
        root["status"] = {"code": STATUS_ERROR, "message": trace.error}
    attempts = {(a.hop, a.attempt): a for h in trace.hops for a in (*h.attempts, h)}
    announced: set[tuple[int, int]] = set()
    model = str(trace.meta.get("model", ""))
    for group in _groups(trace.steps):
        first = group[0]
        node = NODE_OF[first.action]
        chain = b.open(node, "CHAIN", root["spanId"], [
            attribute("graph.node.id", node),
            attribute("metadata", canonical_json({"cuer.steps": [s.model_dump(mode="json")
                                                           for s in group]}))])
        attempt = attempts.get((first.hop, first.attempt))
        if node == "retrieve" and attempt is not None:
            b.close(b.open("retrieve", "RETRIEVER", chain["spanId"], _retriever_attrs(attempt)))
            announced.add((first.hop, first.attempt))
        elif node == "read" and attempt is not None:
            b.close(b.open("read", "LLM", chain["spanId"], _reader_attrs(model, attempt)))
        elif node == "answer":
            b.close(b.open("answer", "LLM", chain["spanId"],
                           _llm_attrs(model, trace.question, trace.answer)))
        b.close(chain)
    for key, attempt in attempts.items():  # an attempt no RETRIEVE step announced
        if key not in announced:
            b.close(b.open("retrieve", "RETRIEVER", root["spanId"], _retriever_attrs(attempt)))
    b.close(root)
    return {"resourceSpans": [{
        "resource": {"attributes": [attribute("service.name", SERVICE_NAME),
                                    attribute("openinference.project.name", SERVICE_NAME)]},
        "scopeSpans": [{"scope": {"name": SCOPE}, "spans": b.spans}]}]}


# ---------------------------------------------------------------------------- run dirs

def trace_files(run_dir: Path) -> list[Path]:
    """Every traces.jsonl of a run directory (a study's own, or an evaluate run's parts)."""
    if not run_dir.is_dir():
        raise CuerError(f"{run_dir}: not a directory")
    files = sorted(run_dir.rglob("traces.jsonl"))
    if not files:
        raise CuerError(f"{run_dir}: no traces.jsonl in this run directory")
    return files


def _by_record(path: Path) -> dict[str, list[JsonObject]]:
    """A study file's rows by record id (none when the file is absent)."""
    out: dict[str, list[JsonObject]] = {}
    if path.exists():
        for row in scan_rows(path, torn_tail_ok=True):
            rid = row.get("record_id") or (row.get("record") or {}).get("record_id")
            if rid:
                out.setdefault(rid, []).append(row)
    return out


def record_metrics(records: Path) -> dict[str, JsonObject]:
    """record id → its metrics, from a study's records.jsonl (labels: for scoring only)."""
    return {rid: rows[0].get("metrics") or {} for rid, rows in _by_record(records).items()}


def run_requests(run_dir: Path) -> Iterator[JsonObject]:
    """Every stored trace of a run directory as an export request, in file order."""
    config = run_dir / "config.json"
    run_key = _digest(config.read_text(encoding="utf-8")) if config.exists() else ""
    for path in trace_files(run_dir):
        study = str(path.parent.relative_to(run_dir))
        diagnoses = _by_record(path.parent / "diagnoses.jsonl")
        metrics = record_metrics(path.parent / "records.jsonl")
        for row in scan_rows(path, torn_tail_ok=True):  # a run still being written
            trace = Trace.model_validate(row["trace"])
            record = row.get("record") or {}
            rid = record.get("record_id", trace.example_id)
            yield trace_request(trace, _digest(run_key, study, rid)[:32], study=study,
                                record=record, metrics=metrics.get(rid),
                                diagnoses=diagnoses.get(rid, []))


def export_run(run_dir: Path, out: Path) -> int:
    """Write every trace of `run_dir` to `out` (OTLP/JSON lines); returns the count."""
    n = 0
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "w", encoding="utf-8") as fh:
        for request in run_requests(run_dir):
            fh.write(canonical_json(request) + "\n")
            n += 1
    tmp.replace(out)
    return n


# ---------------------------------------------------------------------------- sending

def _batches(requests: Iterator[JsonObject], size: int) -> Iterator[JsonObject]:
    """Requests merged `size` at a time (one POST carries many traces)."""
    batch: list[JsonObject] = []
    for request in requests:
        batch += request["resourceSpans"]
        if len(batch) >= size:
            yield {"resourceSpans": batch}
            batch = []
    if batch:
        yield {"resourceSpans": batch}


def traces_url(endpoint: str) -> str:
    """The collector's traces URL: `<endpoint>/v1/traces` unless the endpoint names it."""
    url = endpoint.rstrip("/")
    return url if url.endswith("/v1/traces") else url + "/v1/traces"


def _body(request: JsonObject, protobuf: bool) -> tuple[bytes, str]:
    if not protobuf:
        return canonical_json(request).encode("utf-8"), "application/json"
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise CuerError("--protobuf needs opentelemetry-proto: pip install opentelemetry-proto"
                        ) from None
    from cuer_agent.interchange._otlp import to_protobuf_json

    message = json_format.ParseDict(to_protobuf_json(request), ExportTraceServiceRequest())
    return message.SerializeToString(), "application/x-protobuf"


def send(requests: Iterator[JsonObject], endpoint: str, *, protobuf: bool = False,
         batch: int = 64, timeout: float = 30.0) -> int:
    """POST the requests to an OTLP/HTTP collector, `batch` traces per POST; returns the
    traces sent. A refused connection or a non-2xx reply raises `CuerError` (one line)."""
    import httpx

    url = traces_url(endpoint)
    sent = 0
    with httpx.Client(timeout=timeout) as client:
        for request in _batches(requests, batch):
            body, content_type = _body(request, protobuf)
            try:
                reply = client.post(url, content=body, headers={"Content-Type": content_type})
            except httpx.HTTPError as exc:
                raise CuerError(f"{url}: {type(exc).__name__}: {exc} ({sent} traces sent "
                                "before)") from None
            if reply.status_code // 100 != 2:
                raise CuerError(f"{url}: HTTP {reply.status_code}: {reply.text[:200]!r} "
                                f"({sent} traces sent before)")
            sent += len(request["resourceSpans"])
    return sent

"""Step traces (failure logs of multi-agent teams) as OpenInference spans, and back.

One log is one `ExportTraceServiceRequest` (one line of OTLP/JSON, hex ids): a root
CHAIN span `failure log` (`input.value` the task, `output.value` the final answer; its
`metadata` holds `cuer.step_log`: the key, source, first step number, ground truth,
labels and content hash) and one AGENT span per step, in order, a child of the root
(`agent.name` the agent, `graph.node.name` the role as the source gave it,
`output.value` the content; `metadata` holds `cuer.step`: the step's number and its tool
calls). Ids hash the log's key and the step's position; times are a logical clock: the
same log gives the same bytes.

`read_step_spans` turns such a file back into the same `StepTrace`s, so a log imported
from Who&When or AgentRx can be written by one format and read back by the other
(`diagnose --format whowhen|agentrx` writes `spans.jsonl`; `diagnose --traces spans.jsonl
--format openinference` reads it back as step traces). `is_step_log_file` says whether a
span file holds step logs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonObject
from cuer_agent.errors import DataError
from cuer_agent.interchange._otlp import (
    SPAN_KIND_INTERNAL,
    STATUS_OK,
    attribute,
    read_spans,
    span_file_text,
)
from cuer_agent.run_dir import canonical_json
from cuer_agent.step_trace import LogStep, StepLabels, StepTrace, ToolCall

ROOT_NAME = "failure log"
LOG_KEY = "cuer.step_log"
STEP_KEY = "cuer.step"
EPOCH_NS = 1_700_000_000_000_000_000


def _id(*parts: object, size: int) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:size]


def step_log_request(trace: StepTrace) -> JsonObject:
    """One log as an ExportTraceServiceRequest (OTLP/JSON, hex ids)."""
    trace_id = _id("step-log", trace.key, size=32)
    root_id = _id(trace_id, "root", size=16)
    meta = trace.model_dump(mode="json", include={"key", "source", "first_step",
                                                  "ground_truth", "labels", "content_sha256"})
    spans = [_span(trace_id, root_id, "", ROOT_NAME, 0, len(trace.steps) + 1, [
        attribute("openinference.span.kind", "CHAIN"),
        attribute("input.value", trace.task),
        *([attribute("output.value", trace.final_answer)] if trace.final_answer is not None
          else []),
        attribute("metadata", canonical_json({LOG_KEY: meta}))])]
    for position, step in enumerate(trace.steps):
        spans.append(_span(trace_id, _id(trace_id, position, size=16), root_id, step.agent,
                           position + 1, position + 1, [
                               attribute("openinference.span.kind", "AGENT"),
                               attribute("agent.name", step.agent),
                               attribute("graph.node.name", step.role),
                               attribute("output.value", step.content),
                               attribute("metadata", canonical_json({STEP_KEY: {
                                   "number": step.number,
                                   "tool_calls": [c.model_dump() for c in step.tool_calls]}}))]))
    return {"resourceSpans": [{
        "resource": {"attributes": [attribute("service.name", "cuer-agent"),
                                    attribute("openinference.project.name", "cuer-agent")]},
        "scopeSpans": [{"scope": {"name": "cuer_agent"}, "spans": spans}]}]}


def _span(trace_id: str, span_id: str, parent: str, name: str, start: int, end: int,
          attrs: list[JsonObject]) -> JsonObject:
    span: JsonObject = {"traceId": trace_id, "spanId": span_id, "name": name,
                        "kind": SPAN_KIND_INTERNAL,
                        "startTimeUnixNano": str(EPOCH_NS + 1000 * start),
                        "endTimeUnixNano": str(EPOCH_NS + 1000 * end + 500),
                        "attributes": attrs, "status": {"code": STATUS_OK}}
    if parent:
        span["parentSpanId"] = parent
    return span


def write_step_spans(traces: list[StepTrace], path: Path) -> None:
    """Every log as one line of OTLP/JSON."""
    path.write_text("".join(json.dumps(step_log_request(t), sort_keys=True,
                                       ensure_ascii=False) + "\n" for t in traces),
                    encoding="utf-8")


def is_step_log_file(path: Path) -> bool:
    """Whether a span file's first request holds a step log (as `write_step_spans` writes)."""
    try:
        first = span_file_text(path).split("\n", 1)[0]
    except (OSError, UnicodeDecodeError, DataError):
        return False
    return f'"{ROOT_NAME}"' in first and LOG_KEY in first


def read_step_spans(path: Path) -> tuple[list[StepTrace], dict[str, str]]:
    """The step logs of a span file, in file order; key → why for those without labels."""
    spans = read_spans(path)
    roots = [s for s in spans if s.name == ROOT_NAME and not s.parent_id]
    traces, unlabelled = [], {}
    for root in roots:
        meta: Any = root.json_attribute("metadata").get(LOG_KEY)
        if not isinstance(meta, dict) or "key" not in meta:
            raise DataError(path, f"span {root.span_id}: a failure log without its "
                            f"{LOG_KEY} metadata")
        children = sorted((s for s in spans if s.trace_id == root.trace_id
                           and s.parent_id == root.span_id), key=lambda s: (s.start, s.order))
        steps = tuple(_step(path, s) for s in children)
        labels = meta.get("labels")
        trace = StepTrace(
            key=meta["key"], source=meta["source"], first_step=meta["first_step"],
            task=str(root.attributes.get("input.value", "")), steps=steps,
            final_answer=root.attributes.get("output.value"),
            ground_truth=meta.get("ground_truth"), content_sha256=meta.get("content_sha256"),
            labels=StepLabels.model_validate(labels) if labels else None)
        traces.append(trace)
        if labels is None:
            unlabelled[trace.key] = "exported without labels"
    return traces, unlabelled


def _step(path: Path, span: Any) -> LogStep:
    meta = span.json_attribute("metadata").get(STEP_KEY)
    if not isinstance(meta, dict) or "number" not in meta:
        raise DataError(path, f"span {span.span_id}: a step without its {STEP_KEY} metadata")
    return LogStep(number=meta["number"], agent=str(span.attributes.get("agent.name", "")),
                   role=str(span.attributes.get("graph.node.name", "")),
                   content=str(span.attributes.get("output.value", "")),
                   tool_calls=tuple(ToolCall.model_validate(c)
                                    for c in meta.get("tool_calls") or ()))

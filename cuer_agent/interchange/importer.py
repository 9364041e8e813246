"""Import OpenInference spans (OTLP/JSON) as observable traces.

Spans are grouped by trace id. In each trace the **root** is the span without a parent in
the file (the earliest, if several). Two mappings:

* **exact** — spans cuer-agent exported (the root's `metadata` has "cuer.trace"): the
  trace is rebuilt field for field from the `cuer.*` metadata, the RETRIEVER documents and
  the root's input and output (`cuer_agent.interchange.export`).
* **generic** — any other agent's spans:

  ===============================  =====================================================
  span                             observable trace
  ===============================  =====================================================
  root `input.value`               question (text; or JSON: "question", "query",
                                   "input", or the first user message of "messages")
  root `output.value`              answer (text; or JSON: "answer", "output",
                                   "final_answer", "response", or the last AI message)
  RETRIEVER span (or a TOOL span   one hop, in start order: `input.value` = sub-query;
  with retrieval.documents)        documents = evidence (id: `document.id`, else the
                                   document metadata's "id", else a hash of the content;
                                   title: metadata "title"/"source"/"name")
  TOOL span named in               one hop: `input.value` = sub-query; its output text,
  `retrieval_tools`                one evidence item per blank-line-separated block
  first LLM span after a hop's     the hop's finding: its last output message (or
  retrieval, before the next one   `output.value` when it is text)
  root `metadata` "example_id"     example id (else the trace id)
  ===============================  =====================================================

  A foreign agent shows no SELECT or VERIFY: every retrieved document counts as selected
  (it was in the model's view) and support is "unknown". An error-status span is not a
  failure by itself (LangGraph logs an interrupt as ERROR): such spans are counted in
  `meta.error_spans`, and the trace status stays "ok".

Nothing is dropped silently: every span that gives no field of the trace is returned as
an `Unmapped` row with its reason, and a trace that cannot be mapped at all (no question)
is returned with its reason instead of a trace.

Labels: for exported cuer runs, the root's "cuer.record" and "cuer.metrics" come back as
`ImportedTrace.record` / `.metrics` — for scoring only, never inside the trace.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from cuer_agent._json import JsonObject
from cuer_agent.interchange._otlp import STATUS_ERROR, Span
from cuer_agent.trace import Action, Evidence, HopAttempt, HopRecord, Step, StepState, Trace

QUESTION_KEYS = ("question", "query", "input")
ANSWER_KEYS = ("answer", "output", "final_answer", "response")
USER_ROLES = ("user", "human")
AI_ROLES = ("assistant", "ai")


@dataclass(frozen=True)
class Unmapped:
    """A span (or a whole trace, `span_id` "") that gave no field of a trace, and why."""

    trace_id: str
    span_id: str
    name: str
    kind: str
    reason: str

    def row(self) -> dict[str, str]:
        return {"trace_id": self.trace_id, "span_id": self.span_id, "name": self.name,
                "kind": self.kind, "reason": self.reason}


@dataclass
class ImportedTrace:
    trace_id: str
    trace: Trace
    mapping: str
    """"exact" (a cuer-agent export) or "generic"."""
    record: JsonObject = field(default_factory=dict)
    metrics: JsonObject = field(default_factory=dict)


def _parse(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _is_pair(message: Any) -> bool:
    """A message given as a (role, content) pair: `("user", "...")`, LangGraph's shorthand
    (serialised as a two-string list)."""
    return (isinstance(message, list) and len(message) == 2
            and all(isinstance(part, str) for part in message))


def _message_text(message: Any) -> tuple[str, str]:
    """(role, content) of a message in the shapes LangChain serialises."""
    if _is_pair(message):
        return str(message[0]).lower(), str(message[1])
    if not isinstance(message, dict):
        return "", str(message) if message is not None else ""
    # LangChain serialises a message as {"lc": 1, "kwargs": {...}} (dumpd) or
    # {"type": ..., "data": {...}} (message_to_dict, LangGraph's state output).
    kwargs = next((message[k] for k in ("kwargs", "data") if isinstance(message.get(k), dict)),
                  message)
    role = str(kwargs.get("role") or kwargs.get("type") or message.get("type") or "")
    if not role and isinstance(message.get("id"), list):  # {"lc": 1, "id": [..., "AIMessage"]}
        role = str(message["id"][-1]).removesuffix("Message").lower()
    content = kwargs.get("content", "")
    if isinstance(content, list):  # content blocks
        content = " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b)
                           for b in content)
    return role.lower(), str(content)


def _messages(value: JsonObject) -> list[tuple[str, str]]:
    raw = value.get("messages")
    if isinstance(raw, list) and raw and isinstance(raw[0], list) and not _is_pair(raw[0]):
        # [[...]]: a batch of message lists
        raw = raw[0]
    return [_message_text(m) for m in raw] if isinstance(raw, list) else []


def text_of(value: Any, keys: tuple[str, ...], roles: tuple[str, ...], *,
            last: bool) -> str | None:
    """The text a span's input or output holds: itself when text, else the first of `keys`
    present, else the first (or `last`) message with one of `roles`."""
    value = _parse(value)
    if value is None:
        return None
    if not isinstance(value, dict):
        return value if isinstance(value, str) else json.dumps(value)
    for key in keys:
        if isinstance(value.get(key), str):
            return str(value[key])
    picked = [text for role, text in _messages(value) if role in roles]
    if picked:
        return picked[-1] if last else picked[0]
    return None


def _doc_id(span: Span, i: int, content: str, meta: JsonObject) -> str:
    given = span.attributes.get(f"retrieval.documents.{i}.document.id") or meta.get("id")
    return str(given) if given else content_id(content)


def content_id(text: str) -> str:
    """The id of a document that came without one: a hash of its text."""
    return "doc-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def documents(span: Span) -> list[Evidence]:
    """A RETRIEVER span's documents, in index order; for a TOOL span without
    `retrieval.documents`, the blocks of its output text (`tool_documents`)."""
    if span.kind == "TOOL" and "retrieval.documents.0.document.content" not in span.attributes:
        return tool_documents(span)
    out = []
    i = 0
    while f"retrieval.documents.{i}.document.content" in span.attributes or \
            f"retrieval.documents.{i}.document.id" in span.attributes:
        prefix = f"retrieval.documents.{i}.document"
        content = str(span.attributes.get(f"{prefix}.content", ""))
        meta = span.json_attribute(f"{prefix}.metadata")
        meta = meta if isinstance(meta, dict) else {}
        title = next((str(meta[k]) for k in ("title", "source", "name") if meta.get(k)), "")
        score = span.attributes.get(f"{prefix}.score", 0.0)
        out.append(Evidence(id=_doc_id(span, i, content, meta), title=title, text=content,
                            rank=int(meta.get("rank", i + 1)),
                            score=float(score) if isinstance(score, int | float) else 0.0))
        i += 1
    return out


def tool_documents(span: Span) -> list[Evidence]:
    """A search tool's output text as evidence: one item per blank-line-separated block
    (a tool returns its passages as one string), id = a hash of the block."""
    value = _parse(span.attributes.get("output.value", ""))
    if isinstance(value, dict):  # a ToolMessage: {"type": "tool", "data": {"content": ...}}
        value = _message_text(value)[1]
    text = value if isinstance(value, str) else json.dumps(value)
    blocks = [b.strip() for b in text.split("\n\n") if b.strip()]
    return [Evidence(id=content_id(b), title="", text=b, rank=i)
            for i, b in enumerate(blocks, start=1)]


def _tool_name(span: Span) -> str:
    return str(span.attributes.get("tool.name") or span.name)


def _is_retrieval(span: Span, retrieval_tools: frozenset[str]) -> bool:
    return span.kind == "RETRIEVER" or (span.kind == "TOOL" and (
        "retrieval.documents.0.document.content" in span.attributes
        or _tool_name(span) in retrieval_tools))


def _root(spans: list[Span]) -> Span:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    return min(roots or spans, key=lambda s: (s.start, s.order))


def _exact(root: Span, spans: list[Span]) -> Trace:
    meta = root.json_attribute("metadata")
    steps: list[Step] = []
    attempts: list[HopAttempt] = []
    for span in spans:
        if span is root:
            continue
        smeta = span.json_attribute("metadata")
        smeta = smeta if isinstance(smeta, dict) else {}
        if span.kind == "CHAIN" and "cuer.steps" in smeta:
            steps += [Step.model_validate(s) for s in smeta["cuer.steps"]]
        elif span.kind == "RETRIEVER" and "cuer.attempt" in smeta:
            attempts.append(HopAttempt.model_validate({
                **smeta["cuer.attempt"], "subquery": str(span.attributes.get("input.value", "")),
                "retrieved": documents(span)}))
    hops = []
    for hop in sorted({a.hop for a in attempts}):
        mine = sorted((a for a in attempts if a.hop == hop), key=lambda a: a.attempt)
        hops.append(HopRecord(**mine[-1].model_dump(), attempts=tuple(mine[:-1])))
    return Trace.model_validate({
        **meta["cuer.trace"], "question": str(root.attributes.get("input.value", "")),
        "answer": str(root.attributes.get("output.value", "")), "steps": steps, "hops": hops})


def _finding(span: Span) -> str:
    """The text an LLM span produced: its last output message, or its output value."""
    i, text = 0, None
    while f"llm.output_messages.{i}.message.role" in span.attributes or \
            f"llm.output_messages.{i}.message.content" in span.attributes:
        text = span.attributes.get(f"llm.output_messages.{i}.message.content", text)
        i += 1
    if text is None:
        text = text_of(span.attributes.get("output.value"), ANSWER_KEYS, AI_ROLES, last=True)
    return str(text or "")


def _generic(trace_id: str, root: Span, spans: list[Span], question: str,
             unmapped: list[Unmapped], retrieval_tools: frozenset[str]) -> Trace:
    hops: list[HopRecord] = []
    steps: list[Step] = []
    waiting: HopRecord | None = None  # the hop whose finding the next LLM span gives
    models: list[str] = []
    for span in spans:
        if span is root:
            continue
        if _is_retrieval(span, retrieval_tools):
            if waiting is not None:
                hops.append(waiting)
            docs = tuple(documents(span))
            subquery = text_of(span.attributes.get("input.value"), QUESTION_KEYS,
                               USER_ROLES, last=False) or ""
            waiting = HopRecord(hop=len(hops) + 1, subquery=subquery, retrieved=docs,
                                selected=tuple(d.id for d in docs))
            steps.append(Step(action=Action.RETRIEVE, hop=waiting.hop, state=StepState(
                query=subquery, in_view=waiting.selected, selected=waiting.selected)))
            continue
        if span.kind == "LLM" and span.attributes.get("llm.model_name"):
            models.append(str(span.attributes["llm.model_name"]))
        if span.kind == "LLM" and waiting is not None and not waiting.finding:
            finding = _finding(span)
            waiting = waiting.model_copy(update={"finding": finding})
            steps.append(Step(action=Action.INFER, hop=waiting.hop, state=StepState(
                query=waiting.subquery, in_view=waiting.selected, selected=waiting.selected,
                candidate=finding)))
            continue
        unmapped.append(Unmapped(trace_id, span.span_id, span.name, span.kind or "-",
                                 _reason(span, waiting)))
    if waiting is not None:
        hops.append(waiting)
    answer = text_of(root.attributes.get("output.value"), ANSWER_KEYS, AI_ROLES,
                     last=True) or ""
    used = tuple(dict.fromkeys(i for h in hops for i in h.selected))
    steps.append(Step(action=Action.ANSWER, hop=0, state=StepState(
        query=question, in_view=used, candidate=answer)))
    meta: JsonObject = {"source": "openinference", "trace_id": trace_id,
                            "root": root.name,
                            "error_spans": sum(s.status_code == STATUS_ERROR for s in spans)}
    if models:
        meta["model"] = models[0]
    example_id = root.json_attribute("metadata")
    example_id = example_id.get("example_id") if isinstance(example_id, dict) else None
    return Trace(example_id=str(example_id or trace_id), question=question,
                 steps=tuple(steps), hops=tuple(hops), answer=answer, meta=meta)


def _reason(span: Span, waiting: HopRecord | None) -> str:
    kind = span.kind
    if not kind:
        return "no openinference.span.kind attribute"
    if kind == "LLM":
        return ("LLM span before any retrieval: no hop to give a finding to"
                if waiting is None else "LLM span after the hop's finding was read")
    if kind == "TOOL":
        return (f"TOOL span ({_tool_name(span)}) without retrieval.documents: if it "
                "searches, name it in --retrieval-tools")
    if kind in ("CHAIN", "AGENT"):
        return f"{kind} span: a wrapper; its retrievals and model calls are mapped instead"
    return f"{kind} span: not part of the observable trace"


def map_trace(trace_id: str, spans: list[Span], retrieval_tools: frozenset[str] = frozenset()
              ) -> tuple[ImportedTrace | None, list[Unmapped]]:
    """One trace's spans → the observable trace (or None), plus the unmapped spans.
    `retrieval_tools`: names of TOOL spans that are searches (each call a hop)."""
    spans = sorted(spans, key=lambda s: (s.start, s.order))
    root = _root(spans)
    meta = root.json_attribute("metadata")
    meta = meta if isinstance(meta, dict) else {}
    if "cuer.trace" in meta:
        try:
            trace = _exact(root, spans)
        except (ValidationError, KeyError, TypeError) as exc:
            return None, [Unmapped(trace_id, "", root.name, root.kind,
                                   f"cuer-agent metadata does not form a trace ({exc})"[:300])]
        return ImportedTrace(trace_id, trace, "exact", dict(meta.get("cuer.record") or {}),
                             dict(meta.get("cuer.metrics") or {})), []
    question = text_of(root.attributes.get("input.value"), QUESTION_KEYS, USER_ROLES,
                       last=False)
    if not question:
        return None, [Unmapped(trace_id, "", root.name, root.kind or "-",
                               "the root span's input.value holds no question (looked for "
                               f"text, {', '.join(QUESTION_KEYS)} or a user message)")]
    unmapped: list[Unmapped] = []
    trace = _generic(trace_id, root, spans, question, unmapped, retrieval_tools)
    return ImportedTrace(trace_id, trace, "generic"), unmapped


def import_spans(spans: list[Span], retrieval_tools: Sequence[str] = ()
                 ) -> tuple[list[ImportedTrace], list[Unmapped]]:
    """Every trace of `spans` (in order of first appearance) and everything left out.
    `retrieval_tools`: names of TOOL spans that are searches (a ReAct agent's `search`
    tool returns text, not retrieval.documents)."""
    tools = frozenset(retrieval_tools)
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    traces: list[ImportedTrace] = []
    unmapped: list[Unmapped] = []
    for trace_id, members in by_trace.items():
        imported, left = map_trace(trace_id, members, tools)
        unmapped += left
        if imported is not None:
            traces.append(imported)
    return traces, unmapped

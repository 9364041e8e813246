"""OpenInference export and import, `cuer-agent diagnose --traces`, bad input."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import EVALUATE, Studies, cli_text
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.interchange import import_spans, read_spans, to_protobuf_json
from cuer_agent.interchange._otlp import any_value, attributes
from cuer_agent.run_dir import read_rows
from cuer_agent.studies.diagnose.traces import trace_only_diagnosers
from cuer_agent.trace import Trace

TRACE_ONLY_NAMES = trace_only_diagnosers()
pytestmark = pytest.mark.background(EVALUATE)  # the shared run, made in the background lane


@pytest.fixture(scope="module")
def run(studies: Studies) -> Path:
    """The session's shared `evaluate --hops 3 --n 8` run: read only."""
    return studies.get(*EVALUATE)


@pytest.fixture(scope="module")
def exported(run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spans") / "run.jsonl"
    code, text = cli_text("export", str(run), "--out", str(path))
    assert code == 0, text
    return path


@pytest.fixture(scope="module")
def diagnosed(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`diagnose --traces` of the exported run with its hop budget (the trace-only
    diagnosers, made once for the module): read only."""
    out = tmp_path_factory.mktemp("diagnosed") / "d"
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(out),
                          "--no-cache", "--hops", "3")
    assert code == 0, text
    return out


def stored_traces(run: Path) -> list[Trace]:
    return [Trace.model_validate(row["trace"]) for path in sorted(run.rglob("traces.jsonl"))
            for row in read_rows(path)]


# ------------------------------------------------------------------------------ export

def test_every_exported_line_parses_with_the_protobuf_parser(exported: Path) -> None:
    pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                             reason="opentelemetry-proto is in the test extra")
    from google.protobuf import json_format

    lines = exported.read_text().splitlines()
    assert lines
    for line in lines:
        message = json_format.Parse(json.dumps(to_protobuf_json(json.loads(line))),
                                    pb.ExportTraceServiceRequest())
        spans = message.resource_spans[0].scope_spans[0].spans
        assert spans and len({s.trace_id for s in spans}) == 1


def test_export_follows_the_otlp_json_rules(exported: Path) -> None:
    request = json.loads(exported.read_text().splitlines()[0])
    resource = attributes(request["resourceSpans"][0]["resource"]["attributes"])
    assert resource == {"service.name": "cuer-agent", "openinference.project.name": "cuer-agent"}
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        int(span["traceId"], 16)
        assert isinstance(span["startTimeUnixNano"], str) and span["kind"] == 1
    kinds = [attributes(s["attributes"])["openinference.span.kind"] for s in spans]
    assert kinds[0] == "AGENT" and {"CHAIN", "RETRIEVER", "LLM"} <= set(kinds)
    retriever = attributes(next(s for s in spans if "RETRIEVER" in json.dumps(s))["attributes"])
    assert {"retrieval.documents.0.document.id", "retrieval.documents.0.document.content",
            "retrieval.documents.0.document.score"} <= set(retriever)


def test_every_reader_call_and_every_retrieval_is_a_span(run: Path, exported: Path) -> None:
    """Per trace: a RETRIEVER span per hop attempt, an LLM "read" span per reader call
    (retries included) carrying the sub-query and evidence in, the finding and support
    out, and an LLM "answer" span per answer."""
    requests = [json.loads(line) for line in exported.read_text().splitlines()]
    traces = stored_traces(run)
    assert len(requests) == len(traces)
    checked = 0
    for request, trace in zip(requests, traces, strict=True):
        spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        kinds = [(attributes(s["attributes"])["openinference.span.kind"], s["name"])
                 for s in spans]
        attempts = [a for h in trace.hops for a in (*h.attempts, h)]
        reads = [s for s in trace.steps if s.action.value == "SELECT"]
        answers = [s for s in trace.steps if s.action.value == "ANSWER"]
        assert kinds.count(("RETRIEVER", "retrieve")) == len(attempts)
        assert kinds.count(("LLM", "read")) == len(reads)
        assert kinds.count(("LLM", "answer")) == len(answers)
        read_spans = [attributes(s["attributes"]) for s in spans if s["name"] == "read"
                      and attributes(s["attributes"])["openinference.span.kind"] == "LLM"]
        by_attempt = {(s.hop, s.attempt) for s in reads}
        shown = {(a.hop, a.attempt): a for a in attempts}
        for attrs, key in zip(read_spans, sorted(by_attempt, key=lambda k: (k[0], k[1])),
                              strict=True):
            attempt = shown[key]
            assert json.loads(attrs["input.value"])["subquery"] == attempt.subquery
            assert [e["id"] for e in json.loads(attrs["input.value"])["evidence"]] == [
                e.id for e in attempt.retrieved]
            assert json.loads(attrs["output.value"]) == {
                "finding": attempt.finding, "support": attempt.support,
                "selected": list(attempt.selected)}
            checked += 1
    assert checked > 0


def test_a_reexport_gives_the_same_bytes(run: Path, exported: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    assert cli_text("export", str(run), "--out", str(again))[0] == 0
    assert again.read_bytes() == exported.read_bytes()


def test_export_carries_the_studys_diagnoses_as_evaluations(exported: Path) -> None:
    evaluated = 0
    for line in exported.read_text().splitlines():
        root = attributes(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
                          ["attributes"])
        names = {v for k, v in root.items() if k.endswith(".evaluation.name")}
        evaluated += bool(names)
        assert "metadata" in root and "cuer.trace" in json.loads(root["metadata"])
    assert evaluated > 0


# ---------------------------------------------------------------------------- round trip

def test_import_rebuilds_every_exported_trace_exactly(run: Path, exported: Path) -> None:
    imported, unmapped = import_spans(read_spans(exported))
    assert unmapped == []
    assert [i.trace.to_json() for i in imported] == [t.to_json() for t in stored_traces(run)]
    assert {i.mapping for i in imported} == {"exact"}


def test_round_trip_gives_the_runs_trace_only_diagnoses(run: Path, diagnosed: Path) -> None:
    mine = {(r["record_id"], r["diagnoser"]): r for r in read_rows(diagnosed /
                                                                  "diagnoses.jsonl")}
    compared = 0
    for r in read_rows(run / "agentic" / "diagnoses.jsonl"):
        if r["diagnoser"] in TRACE_ONLY_NAMES:
            got = mine[(r["record_id"], r["diagnoser"])]
            assert (got["pred_hop"], got["pred_stage"], got["propagated"], got["cause"]) == (
                r["pred_hop"], r["pred_stage"], r["propagated"], r["cause"])
            compared += 1
    assert compared > 0


def test_round_trip_scores_diagnosers_as_the_study_did(run: Path, diagnosed: Path) -> None:
    study = json.loads((run / "summary.json").read_text())["diagnosers"]
    mine = json.loads((diagnosed / "summary.json").read_text())["diagnosers"]
    for name in TRACE_ONLY_NAMES:
        scored = mine[name]["scored"]
        assert scored["n"] == study[name]["n"]
        assert scored["exact_hop_acc"] == study[name]["exact_hop_acc"]
        assert scored["clean_blame_rate"] == study[name]["clean_blame_rate"]


def labels_from(rows: list[dict[str, Any]], hop: Callable[[dict[str, Any]], int]) -> str:
    """A labels file for the scored traces of a `diagnose` run's rows."""
    lines = {}
    for r in rows:
        if r["fault"] == "none" and r["correct"]:
            lines[r["trace_id"]] = {"trace_id": r["trace_id"], "outcome": "correct"}
        elif r["fault"] not in (None, "none") and r["correct"] is False:
            lines[r["trace_id"]] = {"trace_id": r["trace_id"], "outcome": "failed",
                                    "hop": hop(r), "stage": r["true_stage"]}
    return "".join(json.dumps(v) + "\n" for v in lines.values())


def test_a_labels_file_scores_the_diagnosers_as_the_records_do(exported: Path, diagnosed: Path,
                                                              tmp_path: Path) -> None:
    rows = list(read_rows(diagnosed / "diagnoses.jsonl"))
    (tmp_path / "labels.jsonl").write_text(labels_from(rows, lambda r: r["true_hop"]))
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "l"),
                          "--labels", str(tmp_path / "labels.jsonl"), "--no-cache", "--hops", "3")
    assert code == 0, text
    assert "consistency" in text and "clean blame" in text
    by_records = json.loads((diagnosed / "summary.json").read_text())["diagnosers"]
    by_labels = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert by_labels["labels"]["source"] == str(tmp_path / "labels.jsonl")
    for name, entry in by_labels["diagnosers"].items():
        assert entry["scored"]["exact_hop_acc"] == by_records[name]["scored"]["exact_hop_acc"]
        assert entry["scored"]["clean_blame_rate"] == by_records[name]["scored"][
            "clean_blame_rate"]
    assert "Accuracy against the labelled first-error hop" in (tmp_path / "l" / "report.md"
                                                               ).read_text()


def test_the_labels_file_wins_over_the_records(exported: Path, tmp_path: Path) -> None:
    assert cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "d"),
               "--no-cache", "--diagnosers", "first-hop")[0] == 0
    rows = list(read_rows(tmp_path / "d" / "diagnoses.jsonl"))
    (tmp_path / "labels.jsonl").write_text(labels_from(rows, lambda r: 1))
    assert cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "l"),
               "--labels", str(tmp_path / "labels.jsonl"), "--diagnosers", "first-hop",
               "--no-cache")[0] == 0
    summary = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert summary["diagnosers"]["first-hop"]["scored"]["exact_hop_acc"]["mean"] == 1.0


@pytest.mark.parametrize(("line", "problem"), [
    ('{"trace_id": "a", "outcome": "failed"}', "a failed trace needs 'hop' and 'stage'"),
    ('{"trace_id": "a", "outcome": "correct", "hop": 1}', "a correct trace has no"),
    ('{"trace_id": "a", "outcome": "lost"}', "outcome"),
    ('{"trace_id": "a", "outcome": "correct", "note": 1}', "unknown key 'note'"),
    ('{"trace_id": "a", "outcome": "failed", "hop": -1, "stage": "tool"}', "hop"),
])
def test_a_bad_label_names_the_file_and_record(exported: Path, tmp_path: Path, line: str,
                                               problem: str) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"trace_id": "b", "outcome": "correct"}\n' + line + "\n")
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "d"),
                     "--labels", str(labels))
    assert code == 2 and f"{labels}, record 2" in text and problem in text
    assert len(text.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()  # refused before any work


def test_a_trace_labelled_twice_is_refused(exported: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"trace_id": "a", "outcome": "correct"}\n' * 2)
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "d"),
                     "--labels", str(labels))
    assert code == 2 and "labelled twice" in text


def test_cuer_format_reads_a_run_directorys_traces(run: Path, tmp_path: Path) -> None:
    code, text = cli_text("diagnose", "--traces", str(run / "agentic" / "traces.jsonl"),
                     "--format", "cuer", "--out", str(tmp_path / "d"), "--no-cache")
    assert code == 0, text
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert summary["mapping"] == {"cuer": summary["mapped"]}
    assert summary["labels"]["scored_failed"] > 0


# ---------------------------------------------------------------------------- foreign spans

def _instrumented(path: Path, run: Callable[[], None]) -> Path:
    """The spans of `run()` under openinference-instrumentation-langchain, serialised by
    the OTel SDK's OTLP encoder and protobuf's JSON printer (base64 ids, enum names)."""
    pytest.importorskip("openinference.instrumentation.langchain",
                        reason="openinference-instrumentation-langchain is in the test extra")
    encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder",
                                  reason="opentelemetry-exporter-otlp-proto-common is in the "
                                         "test extra")
    from google.protobuf.json_format import MessageToJson
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        run()
    finally:
        instrumentor.uninstrument()
    message = encoder.encode_spans(exporter.get_finished_spans())
    path.write_text(MessageToJson(message, indent=None) + "\n")
    return path


def _foreign_spans(tmp_path: Path) -> Path:
    """A LangGraph agent we did not write: two nodes, each a BM25 retriever call and a
    scripted fake chat model call, over its own state keys."""
    from typing import TypedDict

    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        question: str
        notes: list[str]
        answer: str

    docs = [Document(page_content="Paris is the capital of France.", metadata={"title": "Paris"}),
            Document(page_content="France is a country in Europe.", metadata={"title": "France"}),
            Document(page_content="Lima is the capital of Peru.", metadata={"title": "Lima"}),
            Document(page_content="Peru is a country in South America.",
                     metadata={"title": "Peru"})]
    retriever = BM25Retriever.from_documents(docs, k=2)
    llm = FakeListChatModel(responses=["France", "Europe", "Peru", "South America"])

    def hop(state: State) -> dict[str, Any]:
        query = state["notes"][-1] if state["notes"] else state["question"]
        found = retriever.invoke(query)
        reply = llm.invoke(f"{query}\n" + "\n".join(d.page_content for d in found))
        return {"notes": [*state["notes"], str(reply.content)]}

    builder = StateGraph(State)
    builder.add_node("first", hop)
    builder.add_node("second", hop)
    builder.add_node("answer", lambda s: {"answer": s["notes"][-1]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "answer")
    builder.add_edge("answer", END)
    graph = builder.compile()

    def run() -> None:
        for question in ("Which continent is the capital of France in?",
                         "Which continent is Lima's country in?"):
            graph.invoke({"question": question, "notes": [], "answer": ""})
    return _instrumented(tmp_path / "foreign.jsonl", run)


def _react_spans(tmp_path: Path) -> Path:
    """A ReAct-shaped LangGraph agent we did not write: MessagesState, a prebuilt ToolNode
    with a `search` tool that returns text, a scripted chat model (search, then answer)."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def search(query: str) -> str:
        """Search the corpus."""
        return "Paris is the capital of France.\n\nFrance is a country in Europe."

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

    llm = Scripted(responses=[
        AIMessage(content="", tool_calls=[{"name": "search", "id": "c1",
                                           "args": {"query": "capital of France"}}]),
        AIMessage(content="Europe")])
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([search]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    graph = builder.compile()

    def run() -> None:
        graph.invoke({"messages": [HumanMessage(
            content="Which continent is the capital of France in?")]})
    return _instrumented(tmp_path / "react.jsonl", run)


def test_foreign_langgraph_spans_map_and_every_trace_only_diagnoser_gives_a_row(
        tmp_path: Path) -> None:
    spans = _foreign_spans(tmp_path)
    code, text = cli_text("diagnose", "--traces", str(spans), "--out", str(tmp_path / "d"),
                     "--no-cache")
    assert code == 0, text
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert summary["traces"] == summary["mapped"] == 2 and summary["not_mapped"] == []
    traces = [Trace.from_json(line) for line in
              (tmp_path / "d" / "traces.jsonl").read_text().splitlines()]
    assert [t.answer for t in traces] == ["Europe", "South America"]
    assert [[h.finding for h in t.hops] for t in traces] == [["France", "Europe"],
                                                             ["Peru", "South America"]]
    assert all(h.retrieved and h.retrieved[0].title for t in traces for h in t.hops)
    rows = list(read_rows(tmp_path / "d" / "diagnoses.jsonl"))
    assert sorted((r["trace_id"], r["diagnoser"]) for r in rows) == sorted(
        (t.meta["trace_id"], d) for t in traces for d in TRACE_ONLY_NAMES)
    assert all(r["error"] == "" and r["pred_hop"] is not None for r in rows)
    # every span is either mapped or listed with its reason
    listed = list(read_rows(tmp_path / "d" / "unmapped.jsonl"))
    assert summary["unmapped_spans"]["n"] == len(listed) > 0
    assert all(r["reason"] for r in listed)


def test_a_react_agents_search_tool_is_a_hop_when_named(tmp_path: Path) -> None:
    spans = _react_spans(tmp_path)
    code, text = cli_text("diagnose", "--traces", str(spans), "--out", str(tmp_path / "d"),
                     "--retrieval-tools", "search", "--no-cache")
    assert code == 0, text
    trace = Trace.from_json((tmp_path / "d" / "traces.jsonl").read_text().splitlines()[0])
    assert trace.question == "Which continent is the capital of France in?"
    assert trace.answer == "Europe"  # the last AI message of MessagesState's output
    assert [(h.subquery, h.finding, len(h.retrieved)) for h in trace.hops] == [
        ("capital of France", "Europe", 2)]
    assert len(list(read_rows(tmp_path / "d" / "diagnoses.jsonl"))) == len(TRACE_ONLY_NAMES)


def test_an_unnamed_tool_span_is_listed_with_the_hint(tmp_path: Path) -> None:
    traces, unmapped = import_spans(read_spans(_react_spans(tmp_path)))
    assert traces[0].trace.hops == ()
    assert any("name it in --retrieval-tools" in u.reason and u.kind == "TOOL"
               for u in unmapped)


def test_hex_and_base64_ids_import_the_same(tmp_path: Path) -> None:
    b64 = _foreign_spans(tmp_path)
    request = json.loads(b64.read_text())
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    hexed = tmp_path / "hex.jsonl"
    hexed.write_text(json.dumps(request) + "\n")
    a, _ = import_spans(read_spans(b64))
    b, _ = import_spans(read_spans(hexed))
    assert [t.trace.to_json() for t in a] == [t.trace.to_json() for t in b]


def _span(name: str, kind: str | None, span_id: str, parent: str = "", start: int = 1,
          **attrs: Any) -> dict[str, Any]:
    items = {**({"openinference.span.kind": kind} if kind else {}), **attrs}
    span = {"traceId": "ab" * 16, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1),
            "attributes": [{"key": k, "value": any_value(v)} for k, v in items.items()]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _write(tmp_path: Path, spans: list[dict[str, Any]]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    return path


def test_spans_that_give_no_field_are_listed_with_their_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        _span("agent", "CHAIN", "01" * 8, **{"input.value": "Who?", "output.value": "Ann"}),
        _span("embed", "EMBEDDING", "02" * 8, "01" * 8, 2),
        _span("think", "LLM", "03" * 8, "01" * 8, 3),
        _span("search", "RETRIEVER", "04" * 8, "01" * 8, 4, **{
            "input.value": "who", "retrieval.documents.0.document.content": "Ann did it."}),
        _span("read", "LLM", "05" * 8, "01" * 8, 5,
              **{"llm.output_messages.0.message.content": "Ann"}),
        _span("bare", None, "06" * 8, "01" * 8, 6)])
    traces, unmapped = import_spans(read_spans(path))
    assert [h.finding for h in traces[0].trace.hops] == ["Ann"]
    assert {u.name: u.reason for u in unmapped} == {
        "embed": "EMBEDDING span: not part of the observable trace",
        "think": "LLM span before any retrieval: no hop to give a finding to",
        "bare": "no openinference.span.kind attribute"}


def test_a_trace_without_a_question_is_listed_not_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path, [_span("agent", "CHAIN", "01" * 8, **{"output.value": "x"})])
    code, text = cli_text("diagnose", "--traces", str(path), "--out", str(tmp_path / "d"),
                     "--no-cache")
    assert code == 0, text
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert summary["traces"] == 1 and summary["mapped"] == 0
    assert "holds no question" in summary["not_mapped"][0]["reason"]


@given(st.recursive(st.booleans() | st.integers(-2**63, 2**63 - 1)
                    | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=8))
def test_attribute_values_round_trip(value: Any) -> None:
    """What the exporter writes (text, bool, int64, float, lists of them) reads back."""
    assert attributes([{"key": "k", "value": any_value(value)}])["k"] == value


@pytest.mark.shared_data
def test_gold_diagnosers_run_on_traces_a_gold_example_matches(tmp_path: Path) -> None:
    from cuer_agent.data import load_dataset, shared_sample_path

    gold = shared_sample_path("hotpotqa")
    if gold is None:
        pytest.skip("../shared/data not present: HotpotQA sample missing")
    example = load_dataset("hotpotqa", gold).examples[0]
    spans = []
    for i, question in enumerate((example.question.upper(), "A question no example has?")):
        trace_span = [
            _span("agent", "CHAIN", f"{i}1" * 8, **{"input.value": question,
                                                  "output.value": example.answer}),
            _span("search", "RETRIEVER", f"{i}2" * 8, f"{i}1" * 8, 2, **{
                "input.value": question,
                "retrieval.documents.0.document.content": example.answer})]
        for span in trace_span:
            span["traceId"] = f"{i}c" * 16
        spans += trace_span
    path = _write(tmp_path, spans)
    code, text = cli_text("diagnose", "--traces", str(path), "--out", str(tmp_path / "d"),
                     "--diagnosers", "coverage-gold,llm-judge-gold", "--gold", str(gold),
                     "--dataset", "hotpotqa", "--no-cache")
    assert code == 0, text
    rows = list(read_rows(tmp_path / "d" / "diagnoses.jsonl"))
    matched = [r for r in rows if r["trace_id"] == "0c" * 16]
    unmatched = [r for r in rows if r["trace_id"] == "1c" * 16]
    assert all(r["error"] == "" and r["correct"] is True for r in matched)  # by question
    assert all("no gold example matches" in r["error"] for r in unmatched)


# ---------------------------------------------------------------------------- endpoint

class _Receiver(BaseHTTPRequestHandler):
    status = 200
    bodies: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append((self.path, self.headers["Content-Type"], body))
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Receiver", (_Receiver,), {"bodies": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_endpoint_receives_every_trace_as_otlp_json(run: Path, exported: Path, tmp_path: Path,
                                                    receiver: tuple[str, Any]) -> None:
    url, handler = receiver
    code, text = cli_text("export", str(run), "--out", str(tmp_path / "s.jsonl"), "--endpoint", url)
    assert code == 0, text
    assert {(p, t) for p, t, _ in handler.bodies} == {("/v1/traces", "application/json")}
    sent = [rs for _, _, b in handler.bodies for rs in json.loads(b)["resourceSpans"]]
    stored = [json.loads(line)["resourceSpans"][0] for line in
              exported.read_text().splitlines()]
    assert sent == stored


def test_endpoint_protobuf_bodies_decode(run: Path, tmp_path: Path,
                                        receiver: tuple[str, Any]) -> None:
    pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                             reason="opentelemetry-proto is in the test extra")
    url, handler = receiver
    assert cli_text("export", str(run), "--out", str(tmp_path / "s.jsonl"), "--endpoint",
               url + "/v1/traces", "--protobuf")[0] == 0
    traces = 0
    for path, content_type, body in handler.bodies:
        assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
        message = pb.ExportTraceServiceRequest.FromString(body)
        traces += len(message.resource_spans)
    assert traces == len(stored_traces(run))


def test_a_refusing_collector_is_one_line_and_exit_2(run: Path, tmp_path: Path,
                                                     receiver: tuple[str, Any]) -> None:
    url, handler = receiver
    handler.status = 503
    code, text = cli_text("export", str(run), "--out", str(tmp_path / "s.jsonl"), "--endpoint", url)
    assert code == 2 and "HTTP 503" in text and len(text.strip().splitlines()) == 2
    assert (tmp_path / "s.jsonl").exists()  # the file export is already written, and kept


# ---------------------------------------------------------------------------- bad input

def test_the_default_diagnosers_are_the_trace_only_ones() -> None:
    assert sorted(TRACE_ONLY_NAMES) == ["chain-rule", "chance", "consistency", "coverage",
                                        "first-hop", "last-hop", "llm-judge", "rule",
                                        "trace-rule"]


def test_a_probing_diagnoser_without_the_agent_is_refused_before_any_work(
        exported: Path, tmp_path: Path) -> None:
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "d"),
                     "--diagnosers", "coverage,suffix-regen")
    assert code == 2 and "needs the agent that ran the traces (--agent" in text
    assert not (tmp_path / "d").exists()


def test_a_gold_diagnoser_without_gold_is_refused(exported: Path, tmp_path: Path) -> None:
    code, text = cli_text("diagnose", "--traces", str(exported), "--out", str(tmp_path / "d"),
                     "--diagnosers", "llm-judge-gold")
    assert code == 2 and "--gold" in text


def test_a_malformed_line_names_the_file_and_line(exported: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(exported.read_text().splitlines()[0] + "\n{not json\n")
    code, text = cli_text("diagnose", "--traces", str(bad), "--out", str(tmp_path / "d"))
    assert code == 2 and f"{bad}, line 2" in text and "Traceback" not in text


def test_a_bad_id_names_the_file_and_line(tmp_path: Path) -> None:
    span = _span("agent", "CHAIN", "zz", **{"input.value": "q"})
    path = _write(tmp_path, [span])
    code, text = cli_text("diagnose", "--traces", str(path), "--out", str(tmp_path / "d"))
    assert code == 2 and f"{path}, line 1" in text


@pytest.mark.parametrize(("content", "says"), [
    (b"\x89PNG\r\n\x1a\n\x00\xff", "not UTF-8 text"),
    (b"", "empty file"),
    (b'{"resourceSpans": []}\n', "no spans in this file"),
])
def test_a_file_that_holds_no_spans_is_one_line(tmp_path: Path, content: bytes,
                                                says: str) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_bytes(content)
    code, text = cli_text("diagnose", "--traces", str(path), "--out", str(tmp_path / "d"))
    assert code == 2 and says in text and len(text.strip().splitlines()) == 1


def test_a_directory_as_traces_is_named_as_such(tmp_path: Path) -> None:
    code, text = cli_text("diagnose", "--traces", str(tmp_path), "--out", str(tmp_path / "d"))
    assert code == 2 and "a directory, not a spans file" in text


def test_export_of_a_directory_without_traces_is_one_line(tmp_path: Path) -> None:
    code, text = cli_text("export", str(tmp_path))
    assert code == 2 and "no traces.jsonl" in text


def test_a_question_given_as_a_role_content_pair_is_read() -> None:
    # LangGraph's shorthand `{"messages": [("user", "...")]}` is serialised as a
    # two-string list; a batch of messages is a list of message lists.
    from cuer_agent.interchange.importer import QUESTION_KEYS, USER_ROLES, text_of

    pair = json.dumps({"messages": [["user", "Which continent is France in?"]]})
    batch = json.dumps({"messages": [[{"type": "human", "data": {"content": "Why?"}}]]})
    assert text_of(pair, QUESTION_KEYS, USER_ROLES, last=False) == \
        "Which continent is France in?"
    assert text_of(batch, QUESTION_KEYS, USER_ROLES, last=False) == "Why?"

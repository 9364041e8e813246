"""Labelled foreign traces: a LangGraph agent cuer-agent did not write, on MuSiQue.

    python examples/foreign_labelled_traces.py \\
        --data ../shared/data/musique/musique_ans_v1.0_dev.subset.jsonl --out /tmp/foreign
    cuer-agent diagnose --traces /tmp/foreign/spans.jsonl --labels /tmp/foreign/labels.jsonl \\
        --diagnosers consistency,trace-rule,chance,coverage,rule,llm-judge --out /tmp/foreign/d

The agent is a plain loop over its own state keys (`question`, `steps`, `answer`): a
`lookup` node asks one sub-question of LangChain's BM25 retriever (over the record's 20
paragraphs) and has a chat model say what the passages answer; an `answer` node returns
the last note. Spans come from `openinference-instrumentation-langchain`, serialised by
the OpenTelemetry SDK's OTLP encoder: exactly what a LangChain user would export.

The chat model is scripted (`ScriptedReader`): MuSiQue's own decomposition says what each
hop asks and answers, and the script makes the agent go wrong in one known way at one
known hop h, so the label is certain:

* `clean` — every hop asks its sub-question and reads its answer;
* `misread` — at h the reader names another entity of a passage it was shown;
* `withheld` — at h the supporting paragraph is missing from the index; the reader names
  an entity of the best passage it got;
* `drift` — at h >= 2 the sub-question asks about another record's entity, not the
  last note;
* `early_stop` — the agent answers after hop h-1 (label: hop h = n+1, stopped early).

With `--reader paraphrase` the chat model says each note in a sentence of its own, as a
chat model does ("The passages point to X.", "X, according to <title>."), and says it
found nothing in words ("I could not find that in these passages."); the agent's own
loop still carries the bare entity into its next sub-question. The default reader says
the bare entity (and "unknown").

With `--dataset 2wiki` (`--data` a 2WikiMultihopQA JSON file) the agent answers 2Wiki's
two-step chain questions, each put in MuSiQue's shape by `from_2wiki`.

After a fault the scripted reader reads on: each later hop names an entity of its best
passage. A faulted run whose answer still matches the gold answer is left unlabelled (it
did not fail); a record whose clean hops do not retrieve their supporting paragraph is
skipped (its failure would have no certain hop). Faults and hops are drawn from stable
hashes of the record id, so the same data gives the same labels and the same spans (but
for their clock times and the OTel SDK's random `service.instance.id`).

Nothing here reads cuer-agent's code: the labels are the script's, the spans are
LangChain's. `diagnose` sees the spans only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel

FAULTS = ("clean", "misread", "withheld", "drift", "early_stop")
MUSIQUE_KEYS = frozenset({"id", "question", "answer", "question_decomposition", "paragraphs"})
K = 5
_NAME = re.compile(r"\b[A-Z][\w'\-]*(?:\s+(?:of|de|the|and|von|van|la|du)?\s*[A-Z][\w'\-]*)*")


class LoopState(TypedDict):
    question: str
    steps: list[dict[str, str]]
    answer: str


def _draw(key: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little") % n


def _names(text: str, avoid: str) -> list[str]:
    """Capitalised names in a text that the avoided text does not contain."""
    low = avoid.lower()
    return [m.group(0) for m in _NAME.finditer(text)
            if m.start() > 0 and m.group(0).lower() not in low and len(m.group(0)) > 2]


def subquery(template: str, notes: list[str]) -> str:
    """MuSiQue's sub-question with its `#k` references filled by the notes so far."""
    text = re.sub(r"#(\d)", lambda m: notes[int(m.group(1)) - 1], template)
    return " ".join(text.replace(">>", " ").split())


def from_2wiki(record: dict[str, Any]) -> dict[str, Any] | None:
    """A 2WikiMultihopQA chain question in MuSiQue's shape, or None for one that is no
    chain of two steps (comparisons, a supporting title missing from the context).

    Step j asks `<subject> <relation>` of the j-th evidence triple, as MuSiQue's own
    Wikidata sub-questions do ("Joey Lawrence >> sibling"), the second with the first's
    note in place of its subject; its answer is the triple's object, its supporting
    paragraph the j-th supporting title's."""
    triples = record["evidences"]
    titles = list(dict.fromkeys(title for title, _ in record["supporting_facts"]))
    context = [title for title, _ in record["context"]]
    if (record["type"] not in {"compositional", "inference"} or len(triples) != 2
            or len(titles) != 2 or not set(titles) <= set(context)):
        return None
    steps = [{"question": f"{triples[0][0]} >> {triples[0][1]}", "answer": triples[0][2],
              "paragraph_support_idx": context.index(titles[0])},
             {"question": f"#1 >> {triples[1][1]}", "answer": triples[1][2],
              "paragraph_support_idx": context.index(titles[1])}]
    return {"id": record["_id"], "question": record["question"], "answer": record["answer"],
            "question_decomposition": steps,
            "paragraphs": [{"title": title, "paragraph_text": " ".join(sentences)}
                           for title, sentences in record["context"]]}


def read_records(path: Path, dataset: str) -> list[dict[str, Any]]:
    """The records of a MuSiQue-Ans JSONL file, or a 2Wiki JSON file's chain questions in
    MuSiQue's shape."""
    text = path.read_text(encoding="utf-8")
    if dataset == "2wiki":
        return [r for r in map(from_2wiki, json.loads(text)) if r is not None]
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for n, record in enumerate(records, 1):
        if not isinstance(record, dict) or not record.keys() >= MUSIQUE_KEYS:
            raise ValueError(f"record {n} is no MuSiQue-Ans record (it needs "
                             f"{', '.join(sorted(MUSIQUE_KEYS))})")
    return records


def _matches(answer: str, record: dict[str, Any]) -> bool:
    gold = [record["answer"], *record.get("answer_aliases", [])]
    return any(g.lower() in answer.lower() or answer.lower() in g.lower() for g in gold if g)


def retriever(docs: list[Document]) -> Any:
    from langchain_community.retrievers import BM25Retriever

    return BM25Retriever.from_documents(docs, k=K)


class Script:
    """What the scripted agent does on one record under one fault at one hop."""

    def __init__(self, record: dict[str, Any], fault: str, hop: int, drift_to: str) -> None:
        self.record, self.fault, self.hop, self.drift_to = record, fault, hop, drift_to
        self.steps = record["question_decomposition"]
        self.docs = [Document(page_content=p["paragraph_text"], metadata={"title": p["title"]})
                     for p in record["paragraphs"]]
        self.on_track = True

    def stop_after(self) -> int:
        return self.hop - 1 if self.fault == "early_stop" else len(self.steps)

    def query(self, i: int, notes: list[str]) -> str:
        query = subquery(self.steps[i - 1]["question"], notes)
        if self.fault == "drift" and i == self.hop:
            query = query.replace(notes[-1], self.drift_to)
            self.on_track = False
        return query

    def retriever(self, i: int) -> Any:
        if self.fault == "withheld" and i == self.hop:
            support = self.steps[i - 1]["paragraph_support_idx"]
            return retriever([d for j, d in enumerate(self.docs) if j != support])
        return retriever(self.docs)

    def read(self, i: int, query: str, found: list[Document]) -> str:
        """The note of hop i, or '' when a clean hop did not retrieve its support."""
        step = self.steps[i - 1]
        support = self.record["paragraphs"][step["paragraph_support_idx"]]["paragraph_text"]
        shown = [d.page_content for d in found]
        if self.fault in {"misread", "withheld"} and i == self.hop:
            self.on_track = False
            pool = ([support] if self.fault == "misread" else []) + shown
            names = [n for text in pool for n in _names(text, query + " " + step["answer"])]
            return names[0] if names else ""
        if self.on_track:
            return step["answer"] if support in shown else ""
        names = [n for text in shown for n in _names(text, query)]
        return names[0] if names else ""


_PHRASINGS = ("The passages point to {note}.", "{note}, according to {title}.",
              "From what I read, it is {note}.", "It looks like the answer is {note}.")
_NOTHING = ("I could not find that in these passages.", "None of these passages says.")


def paraphrase(note: str, query: str, found: list[Document]) -> str:
    """A chat model's wording of a note (or of finding nothing), drawn by a stable hash."""
    if not note:
        return _NOTHING[_draw(f"nothing:{query}", len(_NOTHING))]
    title = found[0].metadata["title"] if found else "the passages"
    return _PHRASINGS[_draw(f"phrase:{query}", len(_PHRASINGS))].format(note=note, title=title)


def build_agent(script_of: Callable[[str], Script], paraphrasing: bool = False) -> Any:
    from langgraph.graph import END, START, StateGraph

    def lookup(state: LoopState) -> dict[str, Any]:
        script = script_of(state["question"])
        i = len(state["steps"]) + 1
        notes = [s["entity"] for s in state["steps"]]
        query = script.query(i, notes)
        found = script.retriever(i).invoke(query)
        note = script.read(i, query, found)
        said = paraphrase(note, query, found) if paraphrasing else note or "unknown"
        reader = FakeListChatModel(responses=[said])
        reply = reader.invoke(f"Question: {query}\n\n" + "\n\n".join(
            f"{d.metadata['title']}: {d.page_content}" for d in found))
        return {"steps": [*state["steps"], {"query": query, "note": str(reply.content),
                                            "entity": note, "ok": "yes" if note else "no"}]}

    def route(state: LoopState) -> str:
        script = script_of(state["question"])
        last = state["steps"][-1]
        done = len(state["steps"]) >= script.stop_after() or last["ok"] == "no"
        return "answer" if done else "lookup"

    builder = StateGraph(LoopState)
    builder.add_node("lookup", lookup)
    builder.add_node("answer", lambda s: {"answer": s["steps"][-1]["note"] if s["steps"]
                                          else ""})
    builder.add_edge(START, "lookup")
    builder.add_conditional_edges("lookup", route, ["lookup", "answer"])
    builder.add_edge("answer", END)
    return builder.compile()


def plan(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, int, str]]:
    """(record, fault, hop, drift entity) per record, drawn from stable hashes."""
    out = []
    for n, record in enumerate(records):
        steps = len(record["question_decomposition"])
        fault = FAULTS[_draw(f"fault:{record['id']}", len(FAULTS))]
        low = 2 if fault in {"drift", "early_stop"} else 1
        hop = 0 if fault == "clean" else low + _draw(f"hop:{record['id']}", steps - low + 1)
        other = records[(n + 1) % len(records)]["question_decomposition"][0]["answer"]
        out.append((record, fault, hop, other))
    return out


def _counting_ids() -> Any:
    """OTel ids from a counter, not a random source: the same data gives the same ids."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class CountingIds(IdGenerator):
        def __init__(self) -> None:
            self.n = 0

        def generate_span_id(self) -> int:
            self.n += 1
            return self.n

        def generate_trace_id(self) -> int:
            self.n += 1
            return self.n << 64

    return CountingIds()


def record_spans(body: Callable[[Any], None]) -> list[Any]:
    """The finished OTel spans of `body(exporter)`, run under OpenInference's LangChain
    instrumentation (the exporter lets the body find the spans of each run)."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=_counting_ids())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        body(exporter)
    finally:
        instrumentor.uninstrument()
    return list(exporter.get_finished_spans())


def write_spans(spans: list[Any], out: Path) -> None:
    """`out/spans.jsonl`: the spans as one OTLP/JSON export request."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    out.mkdir(parents=True, exist_ok=True)
    (out / "spans.jsonl").write_text(MessageToJson(encode_spans(spans), indent=None) + "\n")


def run(records: list[dict[str, Any]], paraphrasing: bool = False
        ) -> tuple[list[dict[str, Any]], list[Any]]:
    """Run the agent on every planned record under OpenInference instrumentation: the
    labels and the finished OTel spans."""
    labels: list[dict[str, Any]] = []

    def each(exporter: Any) -> None:
        for record, fault, hop, drift_to in plan(records):
            script = Script(record, fault, hop, drift_to)
            agent = build_agent(lambda _q, script=script: script, paraphrasing)
            before = len(exporter.get_finished_spans())
            final = agent.invoke({"question": record["question"], "steps": [], "answer": ""})
            spans = exporter.get_finished_spans()[before:]
            label = _label(record, script, final)
            if label is not None:
                label["trace_id"] = format(spans[0].context.trace_id, "032x")
                labels.append(label)

    spans = record_spans(each)
    return labels, spans


def _label(record: dict[str, Any], script: Script, final: LoopState) -> dict[str, Any] | None:
    steps = final["steps"]
    if any(s["ok"] == "no" for s in steps[: (script.hop or len(steps) + 1) - 1]):
        return None  # a clean hop missed its support: no certain first error
    correct = _matches(final["answer"], record)
    if script.fault == "clean":
        return {"outcome": "correct"} if correct and len(steps) == len(script.steps) else None
    if correct:
        return None  # the fault did not make it fail
    stage = {"misread": "answer", "withheld": "retrieval", "drift": "tool",
             "early_stop": "answer"}[script.fault]
    return {"outcome": "failed", "hop": script.hop, "stage": stage, "fault": script.fault}


def write(records: list[dict[str, Any]], out: Path, paraphrasing: bool = False) -> int:
    """spans.jsonl (OTLP/JSON, one export request) and labels.jsonl in `out`; returns the
    number of labels."""
    labels, spans = run(records, paraphrasing)
    write_spans(spans, out)
    (out / "labels.jsonl").write_text("".join(
        json.dumps({"trace_id": lab.pop("trace_id"), **lab}) + "\n" for lab in labels))
    return len(labels)


def data_parser(description: str) -> argparse.ArgumentParser:
    """The command line of a foreign-agent script: the data file, its data set, the
    output directory and how many records."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, required=True,
                        help="MuSiQue-Ans JSONL, or 2WikiMultihopQA JSON with --dataset 2wiki")
    parser.add_argument("--dataset", choices=("musique", "2wiki"), default="musique",
                        help="2wiki: its two-step chain questions (compositional, inference)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=None, help="first n records (default all)")
    return parser


def parsed_records(parser: argparse.ArgumentParser, args: argparse.Namespace
                   ) -> list[dict[str, Any]]:
    """The records `--data` names, or a one-line usage error (exit 2) naming the file."""
    try:
        return read_records(args.data, args.dataset)[: args.n]
    except OSError as exc:
        parser.error(f"{args.data}: cannot be read ({exc.strerror or exc})")
    except (ValueError, KeyError, TypeError) as exc:
        parser.error(f"{args.data}: not a {args.dataset} file ({type(exc).__name__}: {exc})")


def main() -> None:
    parser = data_parser(__doc__.splitlines()[0])
    parser.add_argument("--reader", choices=("names", "paraphrase"), default="names",
                        help="names: notes are bare entities; paraphrase: sentences")
    args = parser.parse_args()
    records = parsed_records(parser, args)
    count = write(records, args.out, paraphrasing=args.reader == "paraphrase")
    print(f"{count} labelled traces → {args.out}")


if __name__ == "__main__":
    main()

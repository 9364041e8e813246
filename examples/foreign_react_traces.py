"""Held-out labelled foreign traces: LangGraph's prebuilt ReAct agent, on MuSiQue or 2Wiki.

    python examples/foreign_react_traces.py --dataset musique \\
        --data ../shared/data/musique/musique_ans_v1.0_dev.subset.jsonl --out /tmp/react
    cuer-agent diagnose --traces /tmp/react/spans.jsonl --labels /tmp/react/labels.jsonl \\
        --diagnosers first-hop --out /tmp/react/d

The agent is `langgraph.prebuilt.create_react_agent` over `MessagesState` with one tool,
`search`: `langchain_core.tools.create_retriever_tool` over LangChain's BM25 retriever
(k=3, lower-cased word tokens) built per record from its paragraphs. Its spans (the
tool's RETRIEVER span nested in its TOOL span) come from
`openinference-instrumentation-langchain`, serialised by the OpenTelemetry SDK's OTLP
encoder.

The chat model is scripted (`ScriptedToolCaller`, a `BaseChatModel` whose `bind_tools`
keeps it): the record's gold decomposition says what each hop asks, and it reads what
the tool returned as the `ToolMessage` gives it. It goes wrong in one known way at one
known hop h, so the label is certain:

* `clean` — every hop asks its sub-question and reads its answer;
* `misread` — at h it names another entity of the supporting passage it was shown;
* `withheld` — h's supporting paragraph is not in the index (for the whole run); it
  names an entity of the best passage it got;
* `drift` — at h >= 2 the search asks about another record's entity, not the bridge;
* `early_stop` — it answers after hop h-1 (label: hop h, one past the trace's hops).

After a fault it reads on: each later hop names an entity of its best passage. Each AI
message that follows a tool result and calls the next search says its note as a ReAct
thought ("Found it: X. Now I need to know: ...", "According to <title>, that is X.",
"X — next, ..."), but on about a third of the hops (a stable hash of record id and hop)
it says nothing: a bare tool call, as many tool-calling models make. The final message
answers in a sentence ("The answer is X." / "X.").

A faulted run whose answer still matches the gold answer is left unlabelled; a record
whose clean hops (and a misread hop) do not retrieve their supporting paragraph is
skipped, and so is a withheld hop whose passages still state its answer. Faults and hops
are drawn from stable hashes of the record id. Nothing here reads cuer-agent's code: the
labels are the script's, the spans are LangChain's. The data readers and the span export
are `foreign_labelled_traces.py`'s; the agent, its chat model and its labels are its own.
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The data readers and the span export are the scripted loop's: only the agent, its chat
# model and its labels are this script's own.
from foreign_labelled_traces import (
    _draw,
    _names,
    read_records,
    record_spans,
    write_spans,
)
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

FAULTS = ("clean", "misread", "withheld", "drift", "early_stop")
DRAWS = ("clean",) * 4 + FAULTS[1:] * 2  # clean 1/3, each fault 1/6
STAGES = {"misread": "answer", "withheld": "retrieval", "drift": "tool",
          "early_stop": "answer"}
K = 3
PROMPT = "Answer the question. Search for one fact at a time, then answer briefly."
_NAME = re.compile(r"\b[A-Z][\w'\-]*(?:\s+(?:of|de|the|and|von|van|la|du)?\s*[A-Z][\w'\-]*)*")
_PEOPLE = {"father", "mother", "spouse", "sibling", "child", "performer", "producer",
           "creator", "composer", "director", "author", "cast member"}
_RELATIONS = {"located in the administrative territorial entity": "Where is {s} located?",
              "shares border with": "What borders {s}?", "place of birth": "Where was {s} born?",
              "place of death": "Where did {s} die?", "place of burial": "Where is {s} buried?",
              "date of birth": "When was {s} born?", "date of death": "When did {s} die?",
              "country of citizenship": "What country is {s} a citizen of?",
              "educated at": "Where was {s} educated?", "cause of death": "What did {s} die of?",
              "member of sports team": "Which team did {s} play for?",
              "employer": "Who employed {s}?", "followed by": "What came after {s}?",
              "award received": "What award did {s} receive?"}
_THOUGHTS = ("Found it: {note}. Now I need to know: {next}", "According to {title}, that is "
             "{note}.", "{note} — next, {next_low}", "So it is {note}. Let me look that up.",
             "The passage on {title} gives {note}. Next question: {next}")
_FINALS = ("The answer is {note}.", "{note}.", "So the answer is {note}.")
NOT_FOUND = "I could not find the answer in these passages."


def words(text: str) -> list[str]:
    """BM25's tokens: lower-cased words (the retriever's default splits on spaces only)."""
    return re.findall(r"\w+", text.lower())


def natural(template: str, notes: Sequence[str]) -> str:
    """A sub-question of the decomposition as a question, its `#k` filled by the notes
    ("#1 >> place of birth" → "Where was X born?")."""
    text = re.sub(r"#(\d)", lambda m: notes[int(m.group(1)) - 1], template)
    if ">>" in text:
        subject, relation = (part.strip() for part in text.split(">>", 1))
        default = "Who is the {r} of {s}?" if relation in _PEOPLE else "What is the {r} of {s}?"
        return _RELATIONS.get(relation, default).format(s=subject, r=relation)
    return " ".join(text.split())


def _matches(answer: str, record: dict[str, Any]) -> bool:
    gold = [record["answer"], *record.get("answer_aliases", [])]
    low = answer.lower()
    return bool(low) and any(g.lower() in low or low in g.lower() for g in gold if g)


class Script:
    """What the scripted agent does on one record under one fault at one hop."""

    def __init__(self, record: dict[str, Any], fault: str, hop: int, drift_to: str) -> None:
        self.record, self.fault, self.hop, self.drift_to = record, fault, hop, drift_to
        self.steps: list[dict[str, Any]] = record["question_decomposition"]
        self.paragraphs: list[dict[str, str]] = record["paragraphs"]
        self.notes: dict[int, str] = {}
        self.queries: dict[int, str] = {}
        self.supported: dict[int, bool] = {}  # hop → its supporting paragraph was shown
        self.stated = False  # a withheld hop's passages still state its answer
        self.silent: dict[int, bool] = {}  # hop → the message after its result was bare
        self.answer = ""
        self.on_track = True

    def support(self, i: int) -> int:
        return int(self.steps[i - 1]["paragraph_support_idx"])

    def index(self) -> list[Document]:
        """The record's paragraphs as documents; `withheld` leaves out h's support."""
        gone = self.support(self.hop) if self.fault == "withheld" else -1
        return [Document(page_content=p["paragraph_text"], metadata={"title": p["title"]})
                for j, p in enumerate(self.paragraphs) if j != gone]

    def stop_after(self) -> int:
        return self.hop - 1 if self.fault == "early_stop" else len(self.steps)

    def query(self, i: int) -> str:
        notes = [self.notes[j] for j in sorted(self.notes)]
        if self.fault == "drift" and i == self.hop:
            refs = {int(k) for k in re.findall(r"#(\d)", self.steps[i - 1]["question"])}
            notes = [self.drift_to if j in refs else n for j, n in enumerate(notes, 1)]
            self.on_track = False
        self.queries[i] = natural(self.steps[i - 1]["question"], notes)
        return self.queries[i]

    def shown(self, tool_output: str) -> list[int]:
        """The record's paragraphs a tool result holds, in the order it gives them."""
        at = {j: tool_output.find(p["paragraph_text"]) for j, p in enumerate(self.paragraphs)}
        return sorted((j for j, pos in at.items() if pos >= 0), key=lambda j: at[j])

    def read(self, i: int, shown: list[int]) -> tuple[str, str]:
        """(note, title of the passage it came from) of hop i; '' for nothing found."""
        step, query = self.steps[i - 1], self.queries[i]
        self.supported[i] = self.support(i) in shown
        if self.fault in {"misread", "withheld"} and i == self.hop:
            self.on_track = False
            answer = str(step["answer"]).lower()
            texts = [self.paragraphs[j]["paragraph_text"].lower() for j in shown]
            self.stated = self.fault == "withheld" and any(answer in t for t in texts)
            pool = [self.support(i)] if self.fault == "misread" else shown
            return self._name_in(pool, f"{query} {step['answer']}", unlike=answer)
        if self.on_track:
            found = self.supported[i]
            title = self.paragraphs[self.support(i)]["title"]
            return (str(step["answer"]), title) if found else ("", "")
        return self._name_in(shown[:1], query)

    def _name_in(self, pool: list[int], avoid: str, unlike: str = "") -> tuple[str, str]:
        """The first name of the pool's passages that the avoided text does not hold and
        that neither holds nor is held by `unlike` (the answer the hop should read)."""
        for j in pool:
            names = [n for n in _names(self.paragraphs[j]["paragraph_text"], avoid)
                     if not unlike or (unlike not in n.lower() and n.lower() not in unlike)]
            if names:
                return names[0], self.paragraphs[j]["title"]
        return "", ""

    def thought(self, i: int, note: str, title: str, next_query: str) -> str:
        """The content of the message after hop i's result: the note as a ReAct thought,
        or nothing on about a third of the hops."""
        key = f"{self.record['id']}:{i}"
        self.silent[i] = _draw(f"react-silent:{key}", 3) == 0
        if self.silent[i]:
            return ""
        form = _THOUGHTS[_draw(f"react-thought:{key}", len(_THOUGHTS))]
        return form.format(note=note, title=title or "the first passage", next=next_query,
                           next_low=next_query[:1].lower() + next_query[1:])

    def final(self, note: str) -> str:
        self.answer = note
        if not note:
            return NOT_FOUND
        return _FINALS[_draw(f"react-final:{self.record['id']}", len(_FINALS))].format(
            note=note)


class ScriptedToolCaller(BaseChatModel):
    """A tool-calling chat model that follows a `Script`: each call reads the last
    `ToolMessage` and calls `search` again or answers."""

    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-caller"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": "scripted-tool-caller"}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolCaller:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        script: Script = self.script
        results = [m for m in messages if isinstance(m, ToolMessage)]
        i = len(results)
        note, title = script.read(i, script.shown(str(results[-1].content))) if i else ("", "")
        if i:
            script.notes[i] = note
        if i and (i >= script.stop_after() or not note):
            message = AIMessage(content=script.final(note))
        else:
            query = script.query(i + 1)
            content = script.thought(i, note, title, query) if i else ""
            message = AIMessage(content=content, tool_calls=[
                {"name": "search", "args": {"query": query}, "id": f"call_{i + 1}"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def build_agent(script: Script) -> Any:
    from langchain_core.tools import create_retriever_tool

    with warnings.catch_warnings():  # langchain-community is being sunset, and LangGraph
        warnings.simplefilter("ignore")  # 1.x deprecates create_react_agent: both still work
        from langchain_community.retrievers import BM25Retriever
        from langgraph.prebuilt import create_react_agent

        search = create_retriever_tool(
            BM25Retriever.from_documents(script.index(), k=K, preprocess_func=words),
            "search", "Search Wikipedia paragraphs. Input: one question about one entity.")
        return create_react_agent(ScriptedToolCaller(script=script), [search], prompt=PROMPT)


def plan(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, int, str]]:
    """(record, fault, hop, drift entity) per record, drawn from stable hashes."""
    out = []
    for record in records:
        rid, steps = record["id"], record["question_decomposition"]
        fault = DRAWS[_draw(f"react-fault:{rid}", len(DRAWS))]
        if fault == "drift":  # a hop whose sub-question names an earlier hop's note
            hops = [i for i, s in enumerate(steps, 1) if i >= 2 and "#" in s["question"]]
        else:
            hops = list(range(2 if fault == "early_stop" else 1, len(steps) + 1))
        hops = hops or [len(steps)]
        hop = 0 if fault == "clean" else hops[_draw(f"react-hop:{rid}", len(hops))]
        own = {str(s["answer"]).lower() for s in steps} | {record["answer"].lower()}
        others = [str(r["question_decomposition"][0]["answer"]) for r in records
                  if r["id"] != rid]
        start = _draw(f"react-drift:{rid}", max(len(others), 1))
        drift_to = next((o for o in others[start:] + others[:start] if o.lower() not in own),
                        "Atlantis")
        out.append((record, fault, hop, drift_to))
    return out


def label(script: Script) -> tuple[str, dict[str, Any] | None]:
    """(what became of the run, its label or None)."""
    checked = script.hop if script.fault == "misread" else script.hop - 1
    if script.fault == "clean":
        checked = len(script.steps)
    if not all(script.supported.get(i, False) for i in range(1, checked + 1)):
        return "skipped", None  # a clean hop missed its support: no certain first error
    if script.stated:
        return "ambiguous", None  # withheld, yet its passages state the answer: a misread?
    correct = _matches(script.answer, script.record)
    if script.fault == "clean":
        return ("correct", {"outcome": "correct"}) if correct else ("skipped", None)
    if correct:
        return "unlabelled", None  # the fault did not make it fail
    return "failed", {"outcome": "failed", "hop": script.hop, "stage": STAGES[script.fault],
                      "fault": script.fault}


def run(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any], Counter[str]]:
    """Run the agent on every planned record: the labels, the finished OTel spans and
    the counts (outcomes, failures by fault and depth, silent hops)."""
    labels: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()

    def each(exporter: Any) -> None:
        for record, fault, hop, drift_to in plan(records):
            script = Script(record, fault, hop, drift_to)
            before = len(exporter.get_finished_spans())
            build_agent(script).invoke({"messages": [HumanMessage(record["question"])]})
            spans = exporter.get_finished_spans()[before:]
            outcome, lab = label(script)
            counts["records"] += 1
            counts[outcome] += 1
            counts["hops"] += len(script.queries)
            counts["silent hops"] += sum(script.silent.values())
            counts["thought hops"] += len(script.silent) - sum(script.silent.values())
            if lab is not None:
                if outcome == "failed":
                    counts[f"fault {fault}"] += 1
                    counts[f"depth {hop}/{len(script.steps)}"] += 1
                labels.append({"trace_id": format(spans[0].context.trace_id, "032x"), **lab})

    spans = record_spans(each)
    return labels, spans, counts


def write(records: list[dict[str, Any]], out: Path) -> Counter[str]:
    """spans.jsonl (OTLP/JSON) and labels.jsonl in `out`; returns the counts."""
    labels, spans, counts = run(records)
    write_spans(spans, out)
    (out / "labels.jsonl").write_text("".join(json.dumps(lab) + "\n" for lab in labels))
    return counts


def report(counts: Counter[str]) -> str:
    faults = ", ".join(f"{f} {counts[f'fault {f}']}" for f in FAULTS[1:])
    depths = ", ".join(f"{k.removeprefix('depth ')}: {v}"
                       for k, v in sorted(counts.items()) if k.startswith("depth "))
    return "\n".join((
        f"records {counts['records']}: failed {counts['failed']}, correct {counts['correct']}, "
        f"unlabelled (faulted but correct) {counts['unlabelled']}, skipped "
        f"{counts['skipped']} (a clean hop missed its support) + {counts['ambiguous']} "
        "(withheld, its answer still in view)",
        f"failures by fault: {faults}", f"failures by hop/n: {depths}",
        f"searches {counts['hops']}; messages after a result that search again: "
        f"{counts['thought hops']} say the note, {counts['silent hops']} are bare tool calls"))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="MuSiQue-Ans JSONL, or 2WikiMultihopQA JSON with --dataset 2wiki")
    parser.add_argument("--dataset", choices=("musique", "2wiki"), default="musique")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None, help="first N records")
    args = parser.parse_args()
    try:
        records = read_records(args.data, args.dataset)[: args.limit]
    except OSError as exc:
        parser.error(f"{args.data}: cannot be read ({exc.strerror or exc})")
    except (ValueError, KeyError, TypeError) as exc:
        parser.error(f"{args.data}: not a {args.dataset} file ({type(exc).__name__}: {exc})")
    counts = write(records, args.out)
    print(report(counts))
    print(f"→ {args.out / 'spans.jsonl'}, {args.out / 'labels.jsonl'}")


if __name__ == "__main__":
    main()

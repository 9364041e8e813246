"""The agents as LangGraph Server and Studio serve them (`langgraph dev`, `langgraph.json`).

The executor compiles `agent.py` and `single_shot.py` with its own checkpointer and hands
every run a live `AgentContext` (skill client, retriever, fault condition). A server
supplies its own checkpointer and can send only JSON, so the factories here build the same
nodes into graphs that:

* compile **without a checkpointer** (LangGraph Server refuses a custom one);
* take a **JSON-native context** (`ServerContext`: backend, model, base_url, data source,
  k, hop_budget, retries_per_hop — every field has a default, so no context is needed),
  resolved once per process per distinct value into the live context (`live_context`:
  skill client, optional response cache, BM25 over the data source's corpus — the
  synthetic world's shared corpus, or every passage of a dataset file);
* take **just a question** as input (`Question`): a first node, `prepare`, fills the
  state the nodes read (hop counter, budgets, cost) from the context;
* end with `finish`, whose output (`Answer`) holds the final answer, its confidence and the
  **observable trace** (`cuer_agent.trace.Trace` as JSON), the same steps `trace show`
  renders.

Input, output and context schemas are `typing_extensions.TypedDict` / pydantic, so Studio
renders them as forms on Python 3.11 too. No fault condition exists here: a server run is
always a clean run.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from cuer_agent._json import JsonObject
from cuer_agent.agent_context import AgentContext
from cuer_agent.data import dataset_help
from cuer_agent.errors import CuerError
from cuer_agent.graphs import nodes
from cuer_agent.graphs.state import AgentState, initial_state
from cuer_agent.llm.backends import backend_help
from cuer_agent.trace import build_trace


class Node(Protocol):
    """A node of `nodes.py`: (state, runtime) → state update."""

    __name__: str

    def __call__(self, state: Any, runtime: Runtime[Any]) -> Mapping[str, object]: ...


class ServerContext(BaseModel):
    """What a server run may choose, as JSON. Every field has a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str = Field("extractive", description=backend_help() + ".")
    model: str | None = Field(None, description="Model name (ollama/openai), or a .gguf file "
                              "or smollm2-135m (llamacpp).")
    base_url: str | None = Field(None, description="Server URL for ollama/openai.")
    dataset: str = Field("synthetic", description="Data source of the retriever's corpus: "
                         + dataset_help() + ".")
    path: str | None = Field(None, description="Dataset file (not for synthetic).")
    n: int = Field(100, ge=1, description="Synthetic world: questions it is built for "
                   "(the world of `cuer-agent evaluate`'s default run).")
    hops: int = Field(3, ge=1, le=4, description="Synthetic world: hops per question.")
    seed: int = Field(0, description="Synthetic world seed, and the model's decoding seed.")
    k: int = Field(5, ge=1, description="Evidence items retrieved per hop.")
    hop_budget: int = Field(3, ge=1, le=8, description="Most retrieve-read hops.")
    retries_per_hop: int = Field(1, ge=0, le=5, description="Retries of a hop VERIFY "
                                 "found unsupported.")
    cache: str | None = Field(None, description="Response cache file (SQLite); none by "
                              "default.")


class Question(TypedDict, total=False):
    question: str
    """The question to answer (required)."""
    example_id: str
    """An id for the run's trace (default: a hash of the question)."""


class Answer(TypedDict):
    final_answer: str
    """The final answer (`answer` is taken: it names the answering node)."""
    confidence: float | None
    """The agent's self-reported confidence in [0, 1]."""
    observable_trace: JsonObject
    """The run's observable trace (`cuer_agent.trace.Trace`, schema in docs/outputs.md)."""


# langgraph.json loads this file by path, so its imports are absolute.
class ServerState(AgentState, total=False):
    final_answer: str
    """Set by `finish`: the final answer."""
    confidence: float | None
    """Set by `finish`: the final answer's confidence."""
    observable_trace: JsonObject
    """Set by `finish`: the run's observable trace as JSON."""


_LIVE: dict[ServerContext, AgentContext] = {}
_LOCK = threading.Lock()


def server_context(value: object) -> ServerContext:
    """The run's context as a `ServerContext`: from nothing, a JSON object, or itself."""
    if isinstance(value, ServerContext):
        return value
    if value is None:
        return ServerContext()
    if isinstance(value, dict):
        return ServerContext.model_validate(value)
    return ServerContext.model_validate(value, from_attributes=True)


def live_context(ctx: ServerContext) -> AgentContext:
    """The live context of a server context: built once per process per distinct value
    (a model load or a BM25 index is not rebuilt per run)."""
    with _LOCK:
        if ctx not in _LIVE:
            try:
                _LIVE[ctx] = _build(ctx)
            except CuerError as exc:
                # LangGraph Server shows a run's client only the message of built-in
                # exceptions ("An internal error occurred" for ours): say why as a ValueError.
                raise ValueError(f"context: {exc}") from exc
        return _LIVE[ctx]


def _build(ctx: ServerContext) -> AgentContext:
    from pathlib import Path

    from cuer_agent.data import is_generated
    from cuer_agent.data._select import load_study_data
    from cuer_agent.llm.backends import SkillClient, backend_about, make_backend
    from cuer_agent.llm.cache import ResponseCache
    from cuer_agent.retrieval import BM25Retriever

    seeded = {} if backend_about(ctx.backend).rule_based else {"seed": ctx.seed}
    backend = make_backend(ctx.backend, model=ctx.model, base_url=ctx.base_url, **seeded)
    skills = SkillClient(backend, cache=ResponseCache(Path(ctx.cache)) if ctx.cache else None)
    data = load_study_data(ctx.dataset, ctx.path, ctx.n if is_generated(ctx.dataset) else None,
                           ctx.hops, ctx.seed)
    # a data set without a shared corpus: every example's paragraphs, each once
    corpus = data.corpus if data.corpus is not None else list(
        {(p.title, p.index, p.text): p for ex in data.examples for p in ex.passages}.values())
    return AgentContext(skills=skills, retriever=BM25Retriever.from_passages(corpus))


def _live(node: Node) -> Node:
    """The node, run with the live context its JSON context resolves to."""
    def run(state: AgentState, runtime: Runtime[Any]) -> Mapping[str, object]:
        context = runtime.context
        if not isinstance(context, AgentContext):
            context = live_context(server_context(context))
        return node(state, runtime.override(context=context))
    run.__name__ = node.__name__
    run.__doc__ = node.__doc__
    return run


def prepare(state: ServerState, runtime: Runtime[Any]) -> AgentState:
    """Fill what the nodes read, from the question and the context's defaults."""
    question = str(state.get("question") or "").strip()
    if not question:
        raise ValueError('the input needs a question: {"question": "..."}')
    ctx = server_context(None if isinstance(runtime.context, AgentContext)
                         else runtime.context)
    example_id = state.get("example_id") or (
        "q-" + hashlib.sha256(question.encode("utf-8")).hexdigest()[:12])
    return initial_state(example_id, question, hop_budget=ctx.hop_budget, k=ctx.k,
                         retries_per_hop=ctx.retries_per_hop)


def _finish(mode: Literal["agentic", "single_shot"]) -> Node:
    def finish(state: AgentState, runtime: Runtime[AgentContext]) -> Answer:
        """The answer, its confidence and the observable trace, as the run's output."""
        backend = runtime.context.skills.backend
        meta = {"mode": mode, "k": state["k"], "backend": backend.name,
                "model": backend.model}
        trace = build_trace(state, mode, meta)
        return {"final_answer": trace.answer, "confidence": trace.confidence,
                "observable_trace": trace.model_dump(mode="json")}
    return finish


def _builder() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(ServerState, context_schema=ServerContext, input_schema=Question,
                         output_schema=Answer)
    builder.add_node("prepare", prepare)
    builder.add_edge(START, "prepare")
    return builder


def agent() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The multi-hop agent (`agent.py`'s nodes and edges) for LangGraph Server."""
    from cuer_agent.graphs.agent import after_plan, after_read

    builder = _builder()
    for name in ("plan", "retrieve", "read", "answer"):
        builder.add_node(name, _live(getattr(nodes, name)))
    builder.add_node("finish", _live(_finish("agentic")))
    builder.add_edge("prepare", "plan")
    builder.add_conditional_edges("plan", after_plan, ["retrieve", "answer"])
    builder.add_edge("retrieve", "read")
    builder.add_conditional_edges("read", after_read, ["plan", "answer"])
    builder.add_edge("answer", "finish")
    builder.add_edge("finish", END)
    return builder.compile(name="agent")


def single_shot() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The single-shot system (`single_shot.py`: retrieve → answer) for LangGraph Server."""
    builder = _builder()
    builder.add_node("retrieve", _live(nodes.retrieve_question))
    builder.add_node("answer", _live(nodes.answer_from_context))
    builder.add_node("finish", _live(_finish("single_shot")))
    builder.add_edge("prepare", "retrieve")
    builder.add_edge("retrieve", "answer")
    builder.add_edge("answer", "finish")
    builder.add_edge("finish", END)
    return builder.compile(name="single_shot")

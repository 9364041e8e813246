"""A second agent of another shape: a tool-calling (ReAct) loop.

    START → llm ─┬─► tools → llm   (a `search` tool call: one hop)
                 └─► END           (no tool call: the message is the answer)

One LLM node either calls `search` or answers; one tool node runs the retriever. There is
no plan or read node, so hop boundaries are tool calls: hop h is the h-th `search` call,
its evidence the h-th tool message, its finding what the model says next.

* **The model** is any LangChain chat model that can call tools (`build(model=...)`).
  By default `ExtractiveChatModel` puts cuer-agent's offline extractive skills behind the
  chat-model interface — plan → a `search` call, read → the finding it states with its
  next message, answer → the final message — so the agent runs offline and
  deterministically, and its skill calls go through the run's `SkillClient` (counted,
  cached).
* **The retriever** comes from the run context (`AgentContext`, as for our own agent):
  the tool node asks `context.issue` for the query actually sent and `context.retrieve`
  for the evidence actually returned, so a fault condition wraps this agent's retriever
  exactly as it wraps ours.
* **Determinism**: messages get ids from their position (`ai-<n>`, `tool-<n>`; LangChain
  would name them with random uuids), so a run and an identity fork of it are byte for
  byte the same messages.

* **The spec** (`ReactSpec`, what `--agent examples/react_agent.py:build` hands the study)
  says where hops are in the messages: the ``llm`` node plans (a `search` call), reads
  (what it says after a tool message) and answers; the ``tools`` node retrieves. Because
  one ``llm`` execution reads hop h *and* plans hop h+1, the boundary between two hops is
  the end of hop h's tool node: a fork there re-runs that one ``llm`` call.

`trace_of(state)` reads the observable trace (`cuer_agent.trace.Trace`) from the messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import ConfigDict

from cuer_agent.agent_context import AgentContext
from cuer_agent.agents import AgentSpec, Boundary, Role, State
from cuer_agent.graphs.nodes import evidence_view, hop_view
from cuer_agent.llm.skills import (
    AnswerRequest,
    AnswerResponse,
    HopView,
    PlanRequest,
    PlanResponse,
    ReadRequest,
    ReadResponse,
)
from cuer_agent.trace import Cost, Trace

SEARCH = {"name": "search", "description": "Search the corpus; returns the top passages.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                         "required": ["query"]}}
HOP_BUDGET = 3
K = 5


class ReactState(MessagesState, total=False):
    hop_budget: int
    """Most `search` calls the model may make (default 3)."""
    k: int
    """Passages per search (default 5)."""


# ---------------------------------------------------------------------------- reading

def searches(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """One dict per search the tool node ran, in order: {hop, call, subquery (as sent),
    evidence, read (what the next AI message says of it; None until one follows)}."""
    hops: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.name == "search":
            artifact = message.artifact or {}
            read = next((m.additional_kwargs.get("read", {}) for m in messages[i + 1:]
                         if isinstance(m, AIMessage)), None)
            hops.append({"hop": len(hops) + 1, "call": message.tool_call_id,
                         "subquery": artifact.get("query", ""),
                         "evidence": list(artifact.get("evidence", [])), "read": read})
    return hops


def record_of(hop: dict[str, Any]) -> dict[str, Any]:
    """A search of `searches` as a `HopRecord` dict (what the agent's nodes and the trace
    read)."""
    read = hop["read"] or {}
    return {"hop": hop["hop"], "subquery": hop["subquery"], "retrieved": hop["evidence"],
            "selected": read.get("selected", []), "finding": read.get("finding", ""),
            "support": read.get("support", "unknown"), "confidence": read.get("confidence"),
            "reason": read.get("reason", "")}


def _hop_view(hop: dict[str, Any], with_evidence: bool) -> HopView:
    return hop_view(record_of(hop), with_evidence)


# ---------------------------------------------------------------------------- the model

class ExtractiveChatModel(BaseChatModel):
    """cuer-agent's skills (extractive by default) behind the chat-model interface."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    skills: Any
    """The run's `SkillClient`."""
    hop_budget: int = HOP_BUDGET
    reading: Any = None
    """The run context's `reading(hop)` (the `reread` repair); None: always its own."""

    @property
    def _llm_type(self) -> str:
        return "cuer-skills"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ExtractiveChatModel:
        return self  # it knows one tool, `search`

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        question = str(messages[0].content)
        hops = searches(messages)
        read: dict[str, Any] = {}
        if hops and isinstance(messages[-1], ToolMessage):  # read the search just returned
            read = self._read(question, hops)
            hops[-1]["read"] = read
        history = tuple(_hop_view(h, False) for h in hops)
        if len(hops) < self.hop_budget:
            plan = self.skills("plan", PlanRequest(question=question, hop=len(hops) + 1,
                                                   hop_budget=self.hop_budget,
                                                   history=history)).response
            if isinstance(plan, PlanResponse) and plan.action == "search" and plan.subquery:
                call = {"name": "search", "args": {"query": plan.subquery},
                        "id": f"call-{len(hops) + 1}", "type": "tool_call"}
                message = AIMessage(content=read.get("finding", ""), tool_calls=[call],
                                    additional_kwargs={"read": read} if read else {})
                return ChatResult(generations=[ChatGeneration(message=message)])
        final = self.skills("answer", AnswerRequest(
            question=question, hops=tuple(_hop_view(h, True) for h in hops))).response
        reply = final if isinstance(final, AnswerResponse) else AnswerResponse(
            answer="", confidence=0.0)
        message = AIMessage(content=reply.answer, additional_kwargs={
            **({"read": read} if read else {}),
            "answer": {"confidence": reply.confidence, "used_ids": reply.used_ids,
                       "rationale": reply.rationale}})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _read(self, question: str, hops: list[dict[str, Any]]) -> dict[str, Any]:
        hop = hops[-1]
        evidence = tuple(evidence_view(e) for e in hop["evidence"])
        result = self.skills("read", ReadRequest(
            question=question, hop=hop["hop"], subquery=hop["subquery"], evidence=evidence,
            history=tuple(_hop_view(h, False) for h in hops[:-1]),
            reading=self.reading(hop["hop"]) if self.reading else 0))
        reply = result.response if isinstance(result.response, ReadResponse) else ReadResponse()
        shown = {e.id for e in evidence}
        return {"selected": [i for i in dict.fromkeys(reply.selected_ids) if i in shown],
                "finding": reply.finding, "support": reply.support,
                "confidence": reply.confidence, "reason": reply.reason}


# ---------------------------------------------------------------------------- the graph

def build(model: BaseChatModel | None = None) -> tuple[CompiledStateGraph, ReactSpec]:
    """The ReAct agent and its spec; `model=None`: the run's own skills
    (`ExtractiveChatModel`). A given model is offered the `search` tool only while the
    hop budget lasts, so a forced early stop holds for any model."""

    def llm(state: ReactState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        budget = state.get("hop_budget", HOP_BUDGET)
        if model is None:
            chat: Any = ExtractiveChatModel(skills=runtime.context.skills, hop_budget=budget,
                                            reading=runtime.context.reading)
            chat = chat.bind_tools([SEARCH])
        else:
            spent = len(searches(state["messages"])) >= budget
            chat = model if spent else model.bind_tools([SEARCH])
        reply = chat.invoke(state["messages"])
        n = sum(isinstance(m, AIMessage) for m in state["messages"]) + 1
        return {"messages": [reply.model_copy(update={"id": f"ai-{n}"})]}

    def tools(state: ReactState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        done = len(searches(state["messages"]))
        out = []
        for i, call in enumerate(state["messages"][-1].tool_calls, start=1):
            hop = done + i
            query = runtime.context.issue(hop, 1, str(call["args"].get("query", "")))
            evidence = runtime.context.retrieve(hop, query, state.get("k", K))
            out.append(search_result(hop, call["id"], query, evidence))
        return {"messages": out}

    def route(state: ReactState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(ReactState, context_schema=AgentContext)
    builder.add_node("llm", llm)
    builder.add_node("tools", tools)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route, ["tools", END])
    builder.add_edge("tools", "llm")
    # A given chat model reads the tool messages itself: it cannot be asked for another
    # reading, so `reread` is not among its repairs.
    spec = ReactSpec() if model is None else ReactSpec(
        repairs=tuple(r for r in ReactSpec.repairs if r != "reread"))
    return builder.compile(checkpointer=InMemorySaver()), spec


def search_result(hop: int, call_id: str, query: str,
                  evidence: list[dict[str, Any]]) -> ToolMessage:
    """The tool message of hop `hop`: the passages as text (what a chat model reads) and
    as an artifact (what the spec and the extractive reader read)."""
    text = "\n\n".join(f"[{e['id']}] {e['title']}: {e['text']}" for e in evidence)
    return ToolMessage(content=text or "(no results)", name="search", tool_call_id=call_id,
                       id=f"tool-{hop}", artifact={"query": query, "evidence": evidence})


def question_input(question: str, *, hop_budget: int = HOP_BUDGET,
                   k: int = K) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=question, id="question")],
            "hop_budget": hop_budget, "k": k}


# ---------------------------------------------------------------------------- the spec

@dataclass(frozen=True)
class ReactSpec(AgentSpec):
    """Hop h = the h-th `search` call: PLAN = the call, RETRIEVE = its tool message,
    the read = the next AI message."""

    name: str = "react"
    roles: Mapping[str, tuple[Role, ...]] = field(default_factory=lambda: {
        "llm": ("plan", "read", "answer"), "tools": ("retrieve",)})
    boundaries: Mapping[Boundary, tuple[Role, str]] = field(default_factory=lambda: {
        "plan": ("plan", "llm"), "retrieve": ("retrieve", "tools"),
        "read": ("retrieve", "tools"), "answer": ("retrieve", "tools")})
    keys: tuple[str, ...] = ("messages", "k")
    issues_query: Role = "retrieve"  # the tool node sends the query (`context.issue`)

    def input(self, example_id: str, question: str, *, hop_budget: int, k: int,
              retries_per_hop: int) -> State:
        return question_input(question, hop_budget=hop_budget, k=k)

    def step_key(self, state: State, node: str) -> str:
        done, last = len(searches(state["messages"])), state["messages"][-1]
        if node == "tools":
            return f"{done}:retrieve"
        return f"{done + 1}:plan" if getattr(last, "tool_calls", None) else "final:answer"

    def hops(self, state: State) -> list[dict[str, Any]]:
        return [record_of(h) for h in searches(state["messages"]) if h["read"] is not None]

    def answer(self, state: State) -> dict[str, Any]:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or last.tool_calls:
            return {}
        return {"answer": str(last.content), **last.additional_kwargs.get("answer", {})}

    def with_evidence(self, state: State, evidence: list[dict[str, Any]]) -> State:
        *before, last = state["messages"]
        query = (last.artifact or {}).get("query", "")
        hop = len(searches(state["messages"]))
        return {**state, "messages": [*before, search_result(hop, last.tool_call_id, query,
                                                             evidence)]}

    def with_subquery(self, state: State, subquery: str) -> State:
        *before, last = state["messages"]
        calls = [{**last.tool_calls[0], "args": {"query": subquery}}, *last.tool_calls[1:]]
        return {**state, "messages": [*before, last.model_copy(update={"tool_calls": calls})]}

    def with_hops(self, state: State,
                  overrides: Mapping[int, list[dict[str, Any]] | dict[str, Any]]) -> State:
        messages, hop = list(state["messages"]), 0
        for i, message in enumerate(messages):
            if not (isinstance(message, ToolMessage) and message.name == "search"):
                continue
            hop += 1
            new = overrides.get(hop)
            if new is None:
                continue
            record = new if isinstance(new, dict) else {
                "retrieved": new, "selected": [e["id"] for e in new]}
            query = record.get("subquery", (message.artifact or {}).get("query", ""))
            messages[i] = search_result(hop, message.tool_call_id, query, record["retrieved"])
            after = next((j for j in range(i + 1, len(messages))
                          if isinstance(messages[j], AIMessage)), None)
            if after is not None:  # what the model said of this hop
                read = {**messages[after].additional_kwargs.get("read", {}),
                        **{k: record[k] for k in ("selected", "finding", "support",
                                                  "confidence", "reason") if k in record}}
                messages[after] = messages[after].model_copy(update={
                    "additional_kwargs": {**messages[after].additional_kwargs, "read": read}})
        return {**state, "messages": messages, "hop_budget": hop}  # no search after these


def trace_of(state: dict[str, Any], example_id: str = "") -> Trace:
    """The observable trace of a ReAct run: a hop per `search` call (PLAN = the call,
    RETRIEVE = the tool message, SELECT/INFER/VERIFY = what the next AI message says of
    it), then ANSWER."""
    question = str(state["messages"][0].content)
    return ReactSpec().trace(state, example_id=example_id, question=question,
                             meta={"agent": "react"}, cost=Cost())

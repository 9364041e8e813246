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
* **The retriever** comes from the run context (`AgentContext`, as for `graphs/agent.py`):
  the tool node asks `context.issue` for the query actually sent and `context.retrieve`
  for the evidence actually returned, so a fault condition wraps this agent's retriever
  exactly as it wraps ours.
* **Determinism**: messages get ids from their position (`ai-<n>`, `tool-<n>`; LangChain
  would name them with random uuids), so a run and an identity fork of it are byte for
  byte the same messages.

`trace_of(state)` reads the observable trace (`cuer_agent.trace.Trace`) from the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import ConfigDict

from cuer_agent.graphs.nodes import evidence_view, hop_view
from cuer_agent.graphs.state import AgentContext
from cuer_agent.llm.skills import (
    AnswerRequest,
    AnswerResponse,
    HopView,
    PlanRequest,
    PlanResponse,
    ReadRequest,
    ReadResponse,
)
from cuer_agent.trace import Action, Cost, HopRecord, Step, StepState, Trace

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
    """One dict per finished search, in order: {hop, call, subquery (as sent), evidence,
    read (what the next AI message says of it, {} before it is read)}."""
    hops: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.name == "search":
            artifact = message.artifact or {}
            read = next((m.additional_kwargs.get("read", {}) for m in messages[i + 1:]
                         if isinstance(m, AIMessage)), {})
            hops.append({"hop": len(hops) + 1, "call": message.tool_call_id,
                         "subquery": artifact.get("query", ""),
                         "evidence": list(artifact.get("evidence", [])), "read": read})
    return hops


def record_of(hop: dict[str, Any]) -> dict[str, Any]:
    """A search of `searches` as a `HopRecord` dict (what the agent's nodes and the trace
    read)."""
    read = hop["read"]
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
            history=tuple(_hop_view(h, False) for h in hops[:-1])))
        reply = result.response if isinstance(result.response, ReadResponse) else ReadResponse()
        shown = {e.id for e in evidence}
        return {"selected": [i for i in dict.fromkeys(reply.selected_ids) if i in shown],
                "finding": reply.finding, "support": reply.support,
                "confidence": reply.confidence, "reason": reply.reason}


# ---------------------------------------------------------------------------- the graph

def build(model: BaseChatModel | None = None) -> CompiledStateGraph:
    """The ReAct agent; `model=None`: the run's own skills (`ExtractiveChatModel`)."""

    def llm(state: ReactState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        chat = model or ExtractiveChatModel(skills=runtime.context.skills,
                                            hop_budget=state.get("hop_budget", HOP_BUDGET))
        reply = chat.bind_tools([SEARCH]).invoke(state["messages"])
        n = sum(isinstance(m, AIMessage) for m in state["messages"]) + 1
        return {"messages": [reply.model_copy(update={"id": f"ai-{n}"})]}

    def tools(state: ReactState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        done = len(searches(state["messages"]))
        out = []
        for i, call in enumerate(state["messages"][-1].tool_calls, start=1):
            hop = done + i
            query = runtime.context.issue(hop, 1, str(call["args"].get("query", "")))
            evidence = runtime.context.retrieve(hop, query, state.get("k", K))
            text = "\n\n".join(f"[{e['id']}] {e['title']}: {e['text']}" for e in evidence)
            out.append(ToolMessage(content=text or "(no results)", name="search",
                                   tool_call_id=call["id"], id=f"tool-{hop}",
                                   artifact={"query": query, "evidence": evidence}))
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
    return builder.compile(checkpointer=InMemorySaver())


def question_input(question: str, *, hop_budget: int = HOP_BUDGET,
                   k: int = K) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=question, id="question")],
            "hop_budget": hop_budget, "k": k}


# ---------------------------------------------------------------------------- the trace

def trace_of(state: dict[str, Any], example_id: str = "") -> Trace:
    """The observable trace of a ReAct run: a hop per `search` call (PLAN = the call,
    RETRIEVE = the tool message, SELECT/INFER/VERIFY = what the next AI message says of
    it), then ANSWER."""
    messages = state["messages"]
    hops, steps = [], []
    for hop in searches(messages):
        read = hop["read"]
        ids = [e["id"] for e in hop["evidence"]]
        selected = read.get("selected", [])
        common = {"query": hop["subquery"], "in_view": ids}
        steps += [Step(action=Action.PLAN, hop=hop["hop"], state=StepState(
                           query=hop["subquery"])),
                  Step(action=Action.RETRIEVE, hop=hop["hop"], state=StepState(**common))]
        if read:
            steps += [
                Step(action=Action.SELECT, hop=hop["hop"],
                     state=StepState(**common, selected=selected)),
                Step(action=Action.INFER, hop=hop["hop"], state=StepState(
                    **common, selected=selected, candidate=read["finding"])),
                Step(action=Action.VERIFY, hop=hop["hop"], state=StepState(
                    **common, selected=selected, candidate=read["finding"],
                    support=read["support"], confidence=read["confidence"]))]
        hops.append(HopRecord.model_validate(record_of(hop)))
    last = messages[-1]
    final = last.additional_kwargs.get("answer", {}) if isinstance(last, AIMessage) else {}
    answer = str(last.content) if final else ""
    steps.append(Step(action=Action.ANSWER, hop=0, state=StepState(
        query=str(messages[0].content), candidate=answer,
        confidence=final.get("confidence"))))
    return Trace(example_id=example_id, question=str(messages[0].content), steps=tuple(steps),
                 hops=tuple(hops), answer=answer, confidence=final.get("confidence"),
                 used_ids=tuple(final.get("used_ids", [])),
                 rationale=final.get("rationale", ""), cost=Cost(),
                 meta={"agent": "react"})

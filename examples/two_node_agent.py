from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from cuer_agent.agent_context import AgentContext
from cuer_agent.agents import AgentSpec
from cuer_agent.graphs.nodes import evidence_view, hop_views
from cuer_agent.llm.skills import AnswerRequest, PlanRequest, ReadRequest

S = TypedDict("S", {"question": str, "hops": list, "query": str, "answer": dict,  # noqa: UP013
                    "hop_budget": int, "k": int})

def decide(s: S, runtime: Any) -> dict:  # read the search that came back; plan the next, or answer
    ask, q, hops = runtime.context.skills, s["question"], list(s["hops"])
    if hops and "finding" not in (h := hops[-1]):
        read = ask("read", ReadRequest(question=q, hop=h["hop"], subquery=h["subquery"], history=(
            hop_views(hops[:-1])), evidence=tuple(map(evidence_view, h["retrieved"])),
            reading=runtime.context.reading(h["hop"])))  # `reread` asks for another reading
        hops[-1] = {**h, **read.response.model_dump(include={"finding", "support", "reason"}),
                    "selected": read.response.selected_ids}
    if len(hops) < s["hop_budget"]:
        plan = ask("plan", PlanRequest(question=q, hop=len(hops) + 1, hop_budget=s["hop_budget"],
                                       history=hop_views(hops))).response
        if plan.action == "search": return {"hops": hops, "query": plan.subquery}  # noqa: E701
    final = ask("answer", AnswerRequest(question=q, hops=hop_views(hops, with_evidence=True)))
    return {"hops": hops, "query": "", "answer": final.response.model_dump()}

def lookup(s: S, runtime: Any) -> dict:  # send the sub-query and search, through the run context
    n, context = len(s["hops"]) + 1, runtime.context
    query = context.issue(n, 1, s["query"])
    return {"hops": [*s["hops"], {"hop": n, "subquery": query,
                                  "retrieved": context.retrieve(n, query, s["k"])}]}

class TwoNodeSpec(AgentSpec):  # the readers a trace is built from, the writers a fault edits
    def input(self, example_id, question, *, hop_budget, k, retries_per_hop):
        return dict(question=question, hops=[], query="", answer={}, hop_budget=hop_budget, k=k)
    def step_key(self, s, node):  # "2:retrieve" (lookup), "3:plan" or "final:answer" (decide)
        n = len(s["hops"]) + (node == "decide")
        return f"{n}:{'plan' if node == 'decide' else 'retrieve'}" if s["query"] else "final:answer"
    def hops(self, s): return [h for h in s["hops"] if "finding" in h]
    def answer(self, s): return s["answer"]
    def with_subquery(self, s, query): return {**s, "query": query}
    def with_evidence(self, s, ev): return self.with_hops(s, {len(s["hops"]): ev}, answer=False)
    def with_hops(self, s, overrides, answer=True):  # hop n: a whole hop, or its evidence
        hops = list(s["hops"])
        for n, new in overrides.items():
            hops[n - 1] = dict(new) if isinstance(new, dict) else {
                **hops[n - 1], "retrieved": new, "selected": [e["id"] for e in new]}
        return {**s, "hops": hops, **({"hop_budget": len(hops), "query": ""} if answer else {})}

def build() -> tuple[Any, TwoNodeSpec]:
    graph = (StateGraph(S, context_schema=AgentContext).add_node("decide", decide)
             .add_node("lookup", lookup).add_edge(START, "decide").add_edge("lookup", "decide")
             .add_conditional_edges("decide", lambda s: "lookup" if s["query"] else END))
    return graph.compile(checkpointer=InMemorySaver()), TwoNodeSpec(  # where hops are
        "two-node", roles={"decide": ("read", "plan", "answer"), "lookup": ("retrieve",)},
        boundaries={"plan": ("plan", "decide"), "retrieve": ("retrieve", "lookup"),
                    "read": ("retrieve", "lookup"), "answer": ("retrieve", "lookup")},
        keys=("question", "hops", "query", "answer", "k"), issues_query="retrieve")

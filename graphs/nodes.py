"""The nodes of both graphs. Each one makes at most one skill call and appends its steps.

Steps are the observable trace (`cuer_agent.trace.StepData`: `Step` as JSON). A node that gets a
parse failure from its skill records it as an outcome (a step note and the
`parse_failures` counter) and the run continues with a neutral result.

`plan` is where VERIFY has consequences: when the current hop's last attempt failed
(`state.wants_retry`), it asks the planner for a reformulated sub-query for the *same*
hop, showing the failed attempts; otherwise it plans the next hop, or — with the hop
budget spent — answers without a skill call ("answer: the hop budget is spent"). A
planner that asks again a sub-query an earlier attempt asked and found something for is
answered for: the agent answers from what it has (`repeated`; the PLAN step's note says
which hop asked it first), the same rule for every backend — searching again would only
read the same evidence again, and a model that loops spends the rest of the hop budget so.
`read` keeps every attempt: a retry's record replaces the hop's record and carries the
earlier attempts in `attempts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langgraph.runtime import Runtime

from cuer_agent.agent_context import AgentContext
from cuer_agent.llm.backends import SkillResult
from cuer_agent.llm.skills import (
    AnswerRequest,
    AnswerResponse,
    EvidenceView,
    HopView,
    PlanRequest,
    PlanResponse,
    ReadRequest,
    ReadResponse,
)
from cuer_agent.llm.windows import shown, window
from cuer_agent.trace import (
    Action,
    AnswerData,
    EvidenceData,
    HopData,
    StepData,
    StepState,
    StepStateData,
)

from .state import AgentState, wants_retry

BUDGET_SPENT = "answer: the hop budget is spent"
"""The note of the PLAN step that ends a run whose hop budget is spent (no skill call)."""
REPEATED = "answer: sub-query already asked"
"""How the note of the PLAN step begins that ends a run whose planner asked again a
sub-query an earlier attempt asked and found something for (`repeated`)."""


def _asked(subquery: str) -> str:
    """A sub-query as compared for repetition: case, spacing and closing punctuation
    do not make it another question."""
    return " ".join(subquery.casefold().split()).rstrip(" ?.!")


def repeated(hops: Sequence[HopData], subquery: str) -> HopData | None:
    """The earliest attempt (of any hop, retried ones included) that asked `subquery`
    and found something: asking it again would retrieve and read the same again. None:
    not asked, or asked and nothing found (then asking again may be a retry's point)."""
    wanted = _asked(subquery)
    for rec in hops:
        attempts: list[HopData] = [*rec.get("attempts", ()), rec]
        for attempt in attempts:
            if attempt.get("finding") and _asked(attempt["subquery"]) == wanted:
                return attempt
    return None


_STEP_STATE = StepState().model_dump(mode="json")
"""A step state's JSON fields and their defaults."""


def step(action: Action, hop: int, note: str = "", attempt: int = 1,
         **state: Any) -> StepData:
    """One observable step as the JSON `Step(...).model_dump(mode="json")` gives.

    Built directly, not through the model: every step of every fork and probe comes
    here, and pydantic's validate-then-dump was 5 % of a study's CPU. Nothing is lost:
    `build_trace` validates every step (`Step.model_validate`) when the trace is made."""
    if unknown := state.keys() - _STEP_STATE.keys():
        raise TypeError(f"unknown step state field(s): {', '.join(sorted(unknown))}")
    fields = cast(StepStateData, {**_STEP_STATE, **state})
    fields["in_view"] = list(fields["in_view"])
    fields["selected"] = list(fields["selected"])
    if fields["confidence"] is not None:
        fields["confidence"] = float(fields["confidence"])
    return {"action": action.value, "hop": hop, "attempt": attempt, "state": fields,
            "note": note}


def _spend(state: AgentState, result: SkillResult) -> AgentState:
    cost = state["cost"]
    return {
        "cost": {"llm_calls": cost["llm_calls"] + 1,
                 "prompt_tokens": cost["prompt_tokens"] + result.prompt_tokens,
                 "completion_tokens": cost["completion_tokens"] + result.completion_tokens},
        "parse_failures": state["parse_failures"] + (result.status != "ok"),
    }


def evidence_view(ev: EvidenceData, span: Sequence[int] | None = None) -> EvidenceView:
    """An evidence item of the state as a skill request shows it: whole, or its window
    `span` (`cuer_agent.llm.windows`)."""
    text = ev["text"] if span is None else shown(ev["text"], (span[0], span[1]))
    return EvidenceView(id=ev["id"], title=ev["title"], text=text)


def windows_of(evidence: list[EvidenceData], query: str,
               words: int | None) -> dict[str, list[int]]:
    """The windows shown of the items over the backend's `words` budget, by id (none
    without a budget): what a hop record's `windows` holds."""
    if words is None:
        return {}
    return {ev["id"]: list(span) for ev in evidence
            if (span := window(ev["text"], query, words)) is not None}


def hop_view(rec: HopData, with_evidence: bool) -> HopView:
    """A hop record of the state as a skill request shows it (evidence: the selected
    items, each as the reader saw it)."""
    chosen, windows = set(rec.get("selected", ())), rec.get("windows", {})
    evidence = tuple(evidence_view(ev, windows.get(ev["id"]))
                     for ev in rec.get("retrieved", ()) if ev["id"] in chosen)
    return HopView(hop=rec["hop"], subquery=rec["subquery"], finding=rec.get("finding", ""),
                   support=rec.get("support", "unknown"), reason=rec.get("reason", ""),
                   evidence=evidence if with_evidence else ())


def hop_views(hops: list[HopData], with_evidence: bool = False) -> tuple[HopView, ...]:
    """Hop records as a skill request's history shows them (`hop_view` of each)."""
    return tuple(hop_view(rec, with_evidence) for rec in hops)


def _history(state: AgentState, *, with_evidence: bool = False,
             skip_current: bool = False) -> tuple[HopView, ...]:
    """The finished hops as the planner, reader or answerer sees them (last attempts)."""
    return hop_views(state["hops"][:-1] if skip_current else state["hops"], with_evidence)


def _attempts(rec: HopData) -> tuple[HopView, ...]:
    """Every attempt of a hop so far, oldest first (what a retry request shows)."""
    return tuple(hop_view(a, False) for a in [*rec.get("attempts", []), rec])


# --- agent nodes ------------------------------------------------------------------------------

def plan(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """PLAN: a retry of the current hop, the next sub-query, or the decision to answer."""
    if wants_retry(state):
        hop = state["hop"]
        attempt = int(state["hops"][-1].get("attempt", 1)) + 1
        history, retry = _history(state, skip_current=True), _attempts(state["hops"][-1])
    else:
        hop, attempt = state["hop"] + 1, 1
        if state["hop"] >= state["hop_budget"]:
            return {"done": True, "trace": [step(Action.PLAN, hop, BUDGET_SPENT)]}
        history, retry = _history(state), ()
    request = PlanRequest(question=state["question"], hop=hop, hop_budget=state["hop_budget"],
                          history=history, retry=retry)
    result = runtime.context.skills("plan", request)
    update = _spend(state, result)
    reply = result.response
    if not isinstance(reply, PlanResponse):
        note = f"parse_failure: {result.error}"
        return {**update, "done": True, "trace": [step(Action.PLAN, hop, note, attempt)]}
    if reply.action == "answer" or not reply.subquery.strip():
        return {**update, "done": True,
                "trace": [step(Action.PLAN, hop, f"answer: {reply.reason}", attempt)]}
    subquery = runtime.context.issue(hop, attempt, reply.subquery)
    if (earlier := repeated(state["hops"], subquery)) is not None:
        note = (f"{REPEATED} ({subquery!r}) at hop {earlier['hop']}, which found "
                f"{earlier['finding']!r}: {reply.reason}")
        return {**update, "done": True, "trace": [step(Action.PLAN, hop, note, attempt)]}
    return {**update, "hop": hop, "attempt": attempt, "subquery": subquery, "retrieved": [],
            "done": False,
            "trace": [step(Action.PLAN, hop, reply.reason, attempt, query=subquery)]}


def retrieve(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """RETRIEVE: top-k evidence for the current sub-query (no skill call)."""
    evidence = runtime.context.retrieve(state["hop"], state["subquery"], state["k"])
    ids = [ev["id"] for ev in evidence]
    return {"retrieved": evidence,
            "trace": [step(Action.RETRIEVE, state["hop"], attempt=state.get("attempt", 1),
                           query=state["subquery"], in_view=ids)]}


def read(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """SELECT + INFER + VERIFY in one skill call; records the attempt (a retry's record
    replaces the hop's record and keeps the earlier attempts)."""
    hop, query, evidence = state["hop"], state["subquery"], state["retrieved"]
    attempt = int(state.get("attempt", 1))
    retrying = attempt > 1 and bool(state["hops"]) and state["hops"][-1]["hop"] == hop
    windows = windows_of(evidence, query, runtime.context.skills.evidence_words)
    request = ReadRequest(question=state["question"], hop=hop, subquery=query,
                          evidence=tuple(evidence_view(ev, windows.get(ev["id"]))
                                         for ev in evidence),
                          history=_history(state, skip_current=retrying),
                          reading=runtime.context.reading(hop))
    result = runtime.context.skills("read", request)
    update = _spend(state, result)
    reply = result.response if isinstance(result.response, ReadResponse) else ReadResponse()
    note = "" if result.status == "ok" else f"parse_failure: {result.error}"
    in_view = [ev["id"] for ev in evidence]
    # A model may cite ids it was never shown; only shown ids count as selected.
    selected = [i for i in dict.fromkeys(reply.selected_ids) if i in set(in_view)]
    support = reply.support if result.status == "ok" else "unknown"
    confidence = reply.confidence if result.status == "ok" else None
    record: HopData = {"hop": hop, "attempt": attempt, "subquery": query, "retrieved": evidence,
                       "selected": selected, "finding": reply.finding, "support": support,
                       "confidence": confidence, "reason": reply.reason, "windows": windows,
                       "attempts": []}
    hops = list(state["hops"])
    if retrying:
        previous = hops.pop()
        earlier = cast(HopData, {k: v for k, v in previous.items() if k != "attempts"})
        record["attempts"] = [*previous.get("attempts", []), earlier]
    common = {"query": query, "in_view": in_view, "selected": selected}
    steps = [
        step(Action.SELECT, hop, note, attempt, **common),
        step(Action.INFER, hop, "", attempt, **common, candidate=reply.finding),
        step(Action.VERIFY, hop, "", attempt, **common, candidate=reply.finding,
             support=support, confidence=confidence),
    ]
    return {**update, "hops": [*hops, record], "trace": steps}


def answer(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """ANSWER from every hop's selected evidence and findings."""
    request = AnswerRequest(question=state["question"],
                            hops=_history(state, with_evidence=True))
    return _answer(state, runtime, request)


def _answer(state: AgentState, runtime: Runtime[AgentContext],
            request: AnswerRequest) -> AgentState:
    result = runtime.context.skills("answer", request)
    update = _spend(state, result)
    shown = [ev.id for hop in request.hops for ev in hop.evidence]
    if isinstance(result.response, AnswerResponse):
        reply = result.response
        used = [i for i in dict.fromkeys(reply.used_ids) if i in set(shown)]
        final: AnswerData = {"answer": reply.answer, "confidence": reply.confidence,
                             "used_ids": used, "rationale": reply.rationale}
        note = ""
    else:
        final = {"answer": "", "confidence": None, "used_ids": [], "rationale": ""}
        note = f"parse_failure: {result.error}"
    return {**update, "final": final, "done": True,
            "trace": [step(Action.ANSWER, 0, note, query=state["question"],
                           in_view=list(dict.fromkeys(shown)), selected=final["used_ids"],
                           candidate=final["answer"], confidence=final["confidence"])]}


# --- single-shot ------------------------------------------------------------------------------

def retrieve_question(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """Single-shot RETRIEVE: the question itself is the query, as hop 1."""
    return retrieve({**state, "hop": 1, "attempt": 1, "subquery": state["question"]},
                    runtime) | {"hop": 1, "attempt": 1, "subquery": state["question"]}


def answer_from_context(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    """Single-shot SELECT + ANSWER: the answer's used ids are the selection."""
    evidence = state["retrieved"]
    windows = windows_of(evidence, state["question"], runtime.context.skills.evidence_words)
    hop_view = HopView(hop=1, subquery=state["question"],
                       evidence=tuple(evidence_view(ev, windows.get(ev["id"]))
                                      for ev in evidence))
    update = _answer(state, runtime, AnswerRequest(question=state["question"],
                                                   hops=(hop_view,)))
    used = update["final"]["used_ids"]
    ids = [ev["id"] for ev in evidence]
    record: HopData = {"hop": 1, "attempt": 1, "subquery": state["question"],
                       "retrieved": evidence, "selected": used,
                       "finding": update["final"]["answer"], "support": "unknown",
                       "confidence": update["final"]["confidence"], "reason": "",
                       "windows": windows, "attempts": []}
    select = step(Action.SELECT, 1, query=state["question"], in_view=ids, selected=used)
    return {**update, "hops": [record], "trace": [select, *update["trace"]]}

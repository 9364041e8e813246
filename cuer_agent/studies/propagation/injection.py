"""Injecting a fault into a clean run, and what a fork shows of it.

`inject` forks the clean run where the fault meets hop h (as its persistence holds it)
and lets the agent run into it; the measures of a run or a fork follow: `run_metrics`
(correctness, grounding, confidence error, divergences against the clean run), whether
the injection was `effective`, whether the agent `retried` hop h (or any hop after it,
`retried_after`), whether VERIFY fired (`verify_fired`), where the fault first reached
the agent (`first_hit`), and the skill calls a fork spent on its prefix
(`prefix_skill_calls`, which must be 0). The study that uses them:
`cuer_agent.studies.propagation.runner`.
"""

from __future__ import annotations

from cuer_agent.config import PropagationConfig
from cuer_agent.data import Example
from cuer_agent.execution import (
    Edit,
    Executor,
    RunResult,
    force_answer,
    hop_of_key,
    identity,
    replace_evidence,
    replace_subquery,
)
from cuer_agent.interventions import FaultInput, FaultOutcome, FaultSpec
from cuer_agent.interventions.persistence import Persistence, fault_condition
from cuer_agent.metrics import recall_correct
from cuer_agent.metrics.utility import (
    AgenticWeights,
    agentic_divergence,
    confidence_error,
    divergence,
    grounding,
)
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.studies.propagation.rows import ForkMetrics
from cuer_agent.trace import HopAttempt, Trace, attempt_failed


def used_across_hops(trace: Trace) -> list[str]:
    ids = [i for hop in trace.hops for i in hop.selected] + list(trace.used_ids)
    return list(dict.fromkeys(ids))


def run_metrics(trace: Trace, clean: Trace, example: Example,
                config: PropagationConfig) -> ForkMetrics:
    correct = recall_correct(trace.answer, example.gold_answers,
                             threshold=config.recall_threshold)
    return {
        "correct": correct,
        "grounding": grounding(trace.used_titles(), example.supporting_titles),
        "confidence_error": confidence_error(trace.confidence, correct),
        "hops": float(len(trace.hops)),
        "divergence_cuer": divergence(clean.used_ids, clean.answer, clean.confidence,
                                      trace.used_ids, trace.answer, trace.confidence),
        "divergence": agentic_divergence(
            used_across_hops(clean), clean.answer, clean.confidence, clean.actions,
            used_across_hops(trace), trace.answer, trace.confidence, trace.actions,
            AgenticWeights(*config.agentic_weights)),
    }


def prefix_skill_calls(fork: RunResult, first_hop: int) -> int:
    """Skill nodes the fork ran for hops before `first_hop` — must be 0."""
    return sum(1 for key in fork.nodes_run
               if key.split(":", 1)[1] in {"plan", "read"}
               and (hop := hop_of_key(key)) is not None and hop < first_hop)



def first_attempt(trace: Trace, hop: int) -> HopAttempt | None:
    return trace.hops[hop - 1].first_attempt() if hop <= len(trace.hops) else None


def inject(executor: Executor, base: RunResult, spec: FaultSpec, inp: FaultInput,
           outcome: FaultOutcome, persistence: Persistence,
           then: Edit = identity) -> RunResult:
    """Fork the clean run where the fault meets hop h and let the agent run into it
    (`then`: a further edit of the state it resumes from, e.g. `without_retries`).

    Under `query`/`hop` persistence the fault is a condition of the tools: retrieval
    faults fork after hop h's plan (the agent's own retrieve meets the fault), query
    drift and early termination after hop h−1 (its own plan does) — query drift after
    hop h's plan for an agent whose tool sends the sub-query (`AgentSpec.issues_query`).
    Under `once`, the snapshot at the fault's boundary is edited and nothing holds
    afterwards. Under `corpus`, a retrieval fault changes the index from hop h on and
    forks after hop h's plan, as under `query`."""
    hop = inp.hop

    def edited(first: Edit) -> Edit:
        return lambda agent, state: then(agent, first(agent, state))

    if persistence == "once":
        if spec.boundary == "retrieve":
            return executor.fork(base, hop, "retrieve",
                                 edited(replace_evidence(outcome.evidence or [])),
                                 condition=None)
        if spec.boundary == "plan":
            return executor.fork(base, hop, "plan",
                                 edited(replace_subquery(outcome.subquery or "")),
                                 condition=None)
        return executor.fork(base, hop - 1, "read", edited(force_answer(hop - 1)),
                             condition=None)
    condition = fault_condition(spec, inp, persistence, outcome)
    if spec.boundary == "retrieve" or (spec.boundary == "plan"
                                       and executor.spec.issues_query == "retrieve"):
        # the sub-query is sent by the tool: hop h's own plan need not run again
        return executor.fork(base, hop, "plan", then, condition=condition)
    return executor.fork(base, hop - 1, "read", then, condition=condition)


def retried(trace: Trace, hop: int) -> bool:
    """Did the agent retry hop h (VERIFY found an attempt unsupported)?"""
    return hop <= len(trace.hops) and bool(trace.hops[hop - 1].attempts)


def effective(fork: Trace, clean: Trace, hop: int) -> bool:
    """Did the injection change hop h's first attempt: another finding, or another
    selected set, than the clean run's (or hop h never ran)?"""
    after, before = first_attempt(fork, hop), first_attempt(clean, hop)
    if after is None or before is None:
        return True
    return after.finding != before.finding or set(after.selected) != set(before.selected)


def verify_fired(trace: Trace, hop: int) -> bool:
    """Did VERIFY find hop h's first attempt unsupported (or did it select nothing)?"""
    attempt = first_attempt(trace, hop)
    return attempt is not None and attempt_failed(attempt.support, attempt.selected)


def first_hit(fork: Trace, hop: int, retriever: BM25Retriever, k: int,
              boundary: str) -> int | None:
    """The first hop (>= h) at which the fault changed what the agent saw: for a
    retrieval fault, the first attempt whose evidence differs from what the clean
    retriever returns for the same sub-query; for a fault of the agent's own action
    (its sub-query, its stop), hop h itself. None: the fault never reached the agent."""
    if boundary != "retrieve":
        return hop
    for record in fork.hops[hop - 1:]:
        for attempt in (*record.attempts, record):
            clean = [(ev.id, ev.text) for ev in retriever.retrieve(attempt.subquery, k)]
            if [(ev.id, ev.text) for ev in attempt.retrieved] != clean:
                return record.hop
    return None


def retried_after(trace: Trace, hop: int) -> bool:
    """Did the agent retry any hop from h on?"""
    return any(record.attempts for record in trace.hops[hop - 1:])


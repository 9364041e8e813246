"""`consistency`: where a trace first contradicts itself — gold-free, no probe, no replay.

It reads only the observable trace, so it diagnoses imported foreign traces as well as
ours. It puts the trace to ten checks, each a typed `check` request: a language model
answers them; on the offline reader, which is no judge, the diagnoser's own rules do
(`_checks.py` through `_rule_checks.py`, cached under the rules' own version; they share
no function with the extractive agent). What a hop read is its selected
items, or every retrieved one when the trace records no selection; a check that lacks
what it needs abstains:

* strong, each names a hop on its own — **support** (no passage the hop read states its
  finding, in any wording, about the entity asked for), **carry** (a sub-query naming an
  entity neither the question nor an earlier hop gave: stage `tool`), **bridge** (the
  next hop asks about the finding and retrieves nothing about it: the hop that found
  it), **conflict** (two items give one subject different current values for one
  relation), **kind** (a hop asked for a person or a place found a date, a number or a
  describing word), **echo** (a hop's finding is the entity it asked about). `bridge`
  and `echo` read a finding as the one entity a hop found, so they abstain on a finding
  that names several (a reader that answers in a sentence of its passage, "X is a 1994
  film directed by Y."): before, a sentence was never the title of what the next hop
  retrieved, and opened with the entity asked about, so both fired on every such hop
  — on a 135M model's runs, `consistency` named hop 1 on 118 of 128 failures;
* about the answer — **answer_type** (a number or date asked, none given),
  **grounded** (none of the findings), and **complete** (a part of the question no text
  a finding rests on states: never asked → n+1, asked → the hop that asked it), which
  only places an answer another check failed (or a one-hop trace, below): without
  synonyms a rule cannot tell a paraphrased part ("birthplace" / "born in") from an
  unread one — deciding alone, it blamed 84 % of the clean synthetic runs and 98 % of
  held-out 2Wiki's correct ones;
* weak — **relation** (the sentence read states none of the relation asked for), and the
  agent's own signals: a hop it retried, judged unsupported, or whose retrieval came
  back empty. These never decide alone.

Decision: the earliest strong hop k — or, when the agent's own signals flag a hop before
k, that hop (the failure the retry did not repair). With no strong hop but an answer
that fails `answer_type` or `grounded`: the earliest own-signal hop; else the hop
`complete` names (n+1: the agent stopped too early); else the earliest weak-relation hop;
else n+1 for an answer of the wrong kind, or the answer level (hop 0) for an ungrounded
one. With neither, a trace of **one hop** whose question has a part no text it read
states (`complete`) is placed where `complete` places it: on that hop when it asked the
part (or the question whole) and answered a question of several parts from one reading
(on 2Wiki's development half, all 22 one-hop traces that asked the question whole were
failures, 15 of them labelled at hop 1, 7 stopped early); at hop 2, stopped early, when
it asked a part of the question and answered without asking the rest. Otherwise it
abstains (hop 0, stage `none`). `cause` names the checks that decided. It never reads
the hop budget: a foreign trace has none.

Pass the skill client as the `skills` option. A check whose reply does not parse is
skipped and named in `cause`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuer_agent.llm.skills import CheckRequest, CheckResponse, EvidenceView, TracedHop
from cuer_agent.parallel import fan_out
from cuer_agent.trace import HopRecord, Trace

from ._base import (
    BaseDiagnoser,
    Diagnosis,
    DiagnosisCost,
    DiagnosisView,
    Probe,
    Stage,
    diagnoser,
)
from ._rule_checks import rule_check_client

STRONG: dict[str, Stage] = {"carry": "tool", "support": "retrieval", "bridge": "retrieval",
                            "conflict": "retrieval", "kind": "retrieval", "echo": "retrieval"}
"""Checks that name a hop on their own, with the stage their failure belongs to."""
ANSWER_CHECKS = ("answer_type", "grounded")
"""Checks of the answer that decide; `complete` only places an answer one of them failed."""
CHECKS = (*STRONG, "relation", "complete", *ANSWER_CHECKS)


@dataclass(frozen=True)
class _Findings:
    failed: dict[str, CheckResponse]
    unparsed: tuple[str, ...]
    cost: DiagnosisCost


def traced_hops(trace: Trace) -> tuple[TracedHop, ...]:
    """Every attempt of every hop, as the check skill sees it (retried attempts first)."""
    return tuple(
        TracedHop(hop=a.hop, attempt=a.attempt, subquery=a.subquery,
                  retrieved=tuple(EvidenceView(id=e.id, title=e.title, text=e.text)
                                  for e in a.retrieved),
                  selected=a.selected, finding=a.finding, support=a.support, reason=a.reason)
        for hop in trace.hops for a in (*hop.attempts, hop))


def own_signals(trace: Trace) -> list[int]:
    """Hops the agent itself flagged: retried, judged its evidence unsupported, or got an
    empty retrieval. (Not "selected nothing": most foreign traces record no selection.)"""
    def flagged(hop: HopRecord) -> bool:
        return (bool(hop.attempts) or hop.support == "unsupported"
                or any(not a.retrieved for a in (*hop.attempts, hop)))
    return [hop.hop for hop in trace.hops if flagged(hop)]


@diagnoser("consistency", help="gold-free: where the trace first contradicts itself",
           default_rank=1)
class Consistency(BaseDiagnoser):
    @property
    def stand_in(self) -> str | None:  # type: ignore[override]
        if self.rule_based_backend() is None:
            return None
        return ("rule-based checker with its own word primitives (Snowball stems, "
                "diagnosers/_check_words.py): it shares no function with the extractive agent, "
                "and knows no synonym (population / inhabitants)")

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        trace = view.trace
        found = self._run_checks(trace)
        hop, stage, why = decide(trace, found.failed)
        skipped = f" (unparsed: {', '.join(found.unparsed)})" if found.unparsed else ""
        return Diagnosis(hop=hop, stage=stage, propagated=0 < hop < len(trace.hops),
                         severity=0.0 if stage == "none" else 1.0, cause=why + skipped,
                         cost=found.cost)

    def _run_checks(self, trace: Trace) -> _Findings:
        skills = self.options["skills"]
        if self.rule_based_backend() is not None:
            skills = rule_check_client(skills)
        hops = traced_hops(trace)
        failed: dict[str, CheckResponse] = {}
        unparsed, tokens = [], 0
        # The checks are independent requests: on a model server they go out at once.
        results = fan_out(lambda name: skills("check", CheckRequest(
            check=name, question=trace.question, hops=hops, answer=trace.answer)), CHECKS)
        for name, result in zip(CHECKS, results, strict=True):
            tokens += result.prompt_tokens + result.completion_tokens
            reply = result.response
            if not isinstance(reply, CheckResponse):
                unparsed.append(name)
            elif not reply.consistent:
                failed[name] = reply
        calls = len(CHECKS)
        return _Findings(failed, tuple(unparsed), DiagnosisCost(calls=calls, tokens=tokens))


def decide(trace: Trace, failed: dict[str, CheckResponse]) -> tuple[int, Stage, str]:
    """(hop, stage, cause) from the failed checks and the agent's own signals (see the
    module docstring). Hops a check names outside the trace are ignored."""
    n = len(trace.hops)
    def hops_of(name: str, top: int) -> list[int]:
        reply = failed.get(name)
        return [h for h in reply.hops if 1 <= h <= top] if reply else []

    own = own_signals(trace)
    strong = sorted((hops_of(name, n)[0], name) for name in STRONG if hops_of(name, n))
    if strong:
        hop, name = strong[0]
        cause = f"{name}: {failed[name].reason}"
        earlier = [j for j in own if j < hop]
        if earlier:
            return earlier[0], "retrieval", (f"own signal at hop {earlier[0]} (retry, failed "
                                             f"VERIFY or empty retrieval), then {cause}")
        return hop, STRONG[name], cause
    if not any(name in failed for name in ANSWER_CHECKS):
        if n == 1 and "complete" in failed:
            if hops_of("complete", 1):
                return 1, "retrieval", (f"complete: {failed['complete'].reason}; the trace's "
                                        "one hop asked it and answered")
            return 2, "answer", (f"complete: {failed['complete'].reason}; the trace's one hop "
                                 "answered without asking it (stopped early)")
        return 0, "none", "no check found an inconsistency"
    cause = "; ".join(f"{name}: {failed[name].reason}"
                      for name in ("complete", *ANSWER_CHECKS) if name in failed)
    if own:
        return own[0], "retrieval", f"own signal at hop {own[0]}, and {cause}"
    if hops_of("complete", n):
        return hops_of("complete", n)[0], "retrieval", cause
    if "complete" in failed:
        return n + 1, "answer", cause
    if weak := hops_of("relation", n):
        return weak[0], "retrieval", f"relation: {failed['relation'].reason}; {cause}"
    if "answer_type" in failed:
        return n + 1, "answer", cause
    return 0, "answer", cause

"""`llm-judge` and `llm-judge-gold`: the backend's judge skill reads the trace and names
stage and hop.

It sees the question, each hop's sub-query, selected evidence, finding and support, and
the final answer — validated JSON back (`JudgeResponse`). `llm-judge-gold` also sees the
gold answer, as the published judge did (`uses_gold`); `llm-judge` never does, which is
the judge a user without labels can run. With the extractive backend the judge is its
rule-based stand-in (the first hop whose evidence or finding is missing or unsupported,
else the answer level; it ignores the gold answer), and reports label it so. Pass the
skill client as the `skills` option.
"""

from __future__ import annotations

from cuer_agent.llm.skills import EvidenceView, HopView, JudgeRequest, JudgeResponse

from ._base import (
    BaseDiagnoser,
    Diagnosis,
    DiagnosisCost,
    DiagnosisView,
    Probe,
    diagnoser,
)


class JudgeParseFailure(RuntimeError):
    """The judge's reply stayed invalid after the repair turn."""


@diagnoser("llm-judge", help="a judge reads the trace, without the gold answer",
           default_rank=4)
class LLMJudge(BaseDiagnoser):
    @property
    def stand_in(self) -> str | None:  # type: ignore[override]
        backend = self.rule_based_backend()
        return (f"rule-based stand-in for an LLM judge ({backend} backend)"
                if backend is not None else None)

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        skills = self.options["skills"]
        trace = view.trace
        hops = tuple(
            HopView(hop=h.hop, subquery=h.subquery, finding=h.finding, support=h.support,
                    reason=h.reason,
                    evidence=tuple(EvidenceView(id=e.id, title=e.title, text=e.text)
                                   for e in h.retrieved if e.id in set(h.selected)))
            for h in trace.hops)
        result = skills("judge", JudgeRequest(question=trace.question, hops=hops,
                                              answer=trace.answer,
                                              gold_answer=view.gold_answer))
        cost = DiagnosisCost(calls=1, tokens=result.prompt_tokens + result.completion_tokens)
        if not isinstance(result.response, JudgeResponse):
            raise JudgeParseFailure(result.error)
        reply = result.response
        hop = reply.hop
        if hop > len(trace.hops) + 1:  # validated against this trace, not trusted
            raise JudgeParseFailure(f"hop {hop} is outside the trace (1..{len(trace.hops) + 1})")
        return Diagnosis(hop=hop, stage=reply.stage,
                         propagated=0 < hop < len(trace.hops), cause=reply.rationale,
                         cost=cost)


@diagnoser("llm-judge-gold", help="the published judge, which sees the gold answer",
           default_rank=5)
class LLMJudgeGold(LLMJudge):
    """The published judge: the request carries the gold answer."""

    uses_gold = True

    @property
    def stand_in(self) -> str | None:  # type: ignore[override]
        base = super().stand_in
        return None if base is None else f"{base}; it ignores the gold answer it is shown"

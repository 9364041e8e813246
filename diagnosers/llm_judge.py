"""`llm-judge`: the backend's judge skill reads the trace and names stage and hop.

It sees the question, each hop's sub-query, selected evidence, finding and support, and
the final answer — validated JSON back (`JudgeResponse`). With the extractive backend the
judge is its rule-based stand-in (the first hop whose evidence or finding is missing or
unsupported, else the answer level), and reports label it so. Pass the skill client as
the `skills` option.
"""

from __future__ import annotations

from cuer_agent.diagnosers._base import (
    BaseDiagnoser,
    Diagnosis,
    DiagnosisCost,
    DiagnosisView,
    Probe,
    diagnoser,
)
from cuer_agent.llm.skills import EvidenceView, HopView, JudgeRequest, JudgeResponse


class JudgeParseFailure(RuntimeError):
    """The judge's reply stayed invalid after the repair turn."""


@diagnoser("llm-judge")
class LLMJudge(BaseDiagnoser):
    @property
    def stand_in(self) -> str | None:  # type: ignore[override]
        skills = self.options.get("skills")
        if skills is not None and skills.backend.name == "extractive":
            return "rule-based stand-in for an LLM judge (extractive backend)"
        return None

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
                                              answer=trace.answer))
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

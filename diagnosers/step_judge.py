"""`llm-judge:<protocol>` on step traces: the LLM judge of Who&When, on any model backend.

The three protocols of Who&When ("Which Agent Causes Task Failures and When?"), each a
diagnoser, with and without the task's ground truth:

* `all_at_once` — the whole log in one `blame` request; the reply names the step and the
  agent (bounded: the step an integer enum of the steps shown, the agent an enum of the
  log's agents);
* `step_by_step` — one `verdict` request per step, in order, each showing the log up to
  that step: "is this step where the failure began?"; the first yes is the step, its
  agent the agent blamed; no yes at all is an abstention;
* `binary_search` — the range of steps halved by `verdict` requests ("did it begin
  within the first half?") until one step is left.

`llm-judge-gold:<protocol>` shows the task's ground truth (Who&When's "with ground
truth" setting: it reads gold, declared). Requests go through the study's skill client:
cached like every request (a second run costs nothing), counted per skill in the
ledger. A log longer than the backend's context is shown with each step cut to its share
of the words the context leaves (`STEP_WORDS_OF_CONTEXT`), and each cut step says so
(`LogStepView.cut`) in the request the trace of the call holds.

The offline backend is a rule-based reader with no step judge: there the judges do not
run, and say why (no rule stands in for them).
"""

from __future__ import annotations

import functools
from typing import Any

from cuer_agent._registry import About
from cuer_agent.llm.backends import SkillClient, backend_about
from cuer_agent.llm.skills import (
    BlameRequest,
    BlameResponse,
    LogStepView,
    VerdictRequest,
    VerdictResponse,
)
from cuer_agent.step_trace import StepTrace

from ._step_base import STEP_DIAGNOSERS, Guess, StepPrediction

PROTOCOLS = ("all_at_once", "step_by_step", "binary_search")
STEP_WORDS_OF_CONTEXT = 10
"""A small model's context holds this many of its evidence windows' words for a whole log
(`SkillClient.evidence_words`: 200 words on llama.cpp's 8,192 tokens): a log is cut so
that its steps share them."""
MIN_STEP_WORDS = 12
"""No step is cut shorter than this."""


class StepJudge:
    control = False

    def __init__(self, protocol: str, gold: bool, skills: SkillClient | None = None,
                 **_options: Any) -> None:
        self.protocol = protocol
        self.gold = gold
        self.name = f"llm-judge{'-gold' if gold else ''}:{protocol}"
        self.reads = "log and ground truth" if gold else "log"
        self.skills = skills

    def not_run(self) -> str:
        if self.skills is None:
            return "needs a model backend (--backend llamacpp | ollama | openai)"
        if backend_about(self.skills.backend.name).rule_based:
            return no_step_judge(self.skills.backend.name)
        return ""

    def predict(self, trace: StepTrace) -> StepPrediction:
        if not trace.steps:
            return StepPrediction((), "an empty log")
        views = self._views(trace)
        if self.protocol == "all_at_once":
            return self._all_at_once(trace, views)
        if self.protocol == "step_by_step":
            return self._step_by_step(trace, views)
        return self._binary_search(trace, views)

    def _views(self, trace: StepTrace) -> tuple[LogStepView, ...]:
        """The steps as the judge sees them, each cut to its share of the context."""
        budget = self.skills.evidence_words if self.skills else None
        words = (None if budget is None else
                 max(MIN_STEP_WORDS, budget * STEP_WORDS_OF_CONTEXT // len(trace.steps)))
        views = []
        for step in trace.steps:
            text = step.content.split()
            cut = words is not None and len(text) > words
            views.append(LogStepView(step=step.number, agent=step.agent, cut=cut,
                                     content=" ".join(text[:words]) if cut else step.content))
        return tuple(views)

    def _truth(self, trace: StepTrace) -> str | None:
        return trace.ground_truth if self.gold else None

    def _all_at_once(self, trace: StepTrace, views: tuple[LogStepView, ...]) -> StepPrediction:
        assert self.skills is not None
        reply = self.skills("blame", BlameRequest(task=trace.task, steps=views,
                                                  ground_truth=self._truth(trace))).response
        if not isinstance(reply, BlameResponse):
            return StepPrediction((), "the reply did not parse")
        return StepPrediction((Guess(step=reply.step, agent=reply.agent),), reply.reason)

    def _ask(self, trace: StepTrace, protocol: str, shown: tuple[LogStepView, ...],
             ask: tuple[int, int]) -> bool | None:
        assert self.skills is not None
        reply = self.skills("verdict", VerdictRequest(
            protocol=protocol, task=trace.task, steps=shown, ask=ask,
            ground_truth=self._truth(trace))).response
        return reply.decisive if isinstance(reply, VerdictResponse) else None

    def _step_by_step(self, trace: StepTrace, views: tuple[LogStepView, ...]
                      ) -> StepPrediction:
        unparsed = 0
        for position, view in enumerate(views):
            said = self._ask(trace, "step_by_step", views[:position + 1], (view.step, view.step))
            unparsed += said is None
            if said:
                return StepPrediction((Guess(step=view.step, agent=view.agent),),
                                      f"the first step it called decisive ({position + 1} "
                                      f"asked)")
        return StepPrediction((), f"no step called decisive ({unparsed} replies unparsed)")

    def _binary_search(self, trace: StepTrace, views: tuple[LogStepView, ...]
                       ) -> StepPrediction:
        low, high, asked = 0, len(views) - 1, 0
        while low < high:
            mid = (low + high) // 2
            said = self._ask(trace, "binary_search", views[low:high + 1],
                             (views[low].step, views[mid].step))
            asked += 1
            if said is None:
                return StepPrediction((), f"a reply did not parse ({asked} asked)")
            low, high = (low, mid) if said else (mid + 1, high)
        return StepPrediction((Guess(step=views[low].step, agent=views[low].agent),),
                              f"the step the halving ended on ({asked} asked)")


def no_step_judge(backend: str) -> str:
    """Why the judges do not run on a rule-based backend."""
    return (f"the {backend} backend is a rule-based reader with no step judge, and no rule "
            "stands in for one: give a model backend (--backend llamacpp | ollama | openai)")


def _register() -> None:
    for protocol in PROTOCOLS:
        for gold in (False, True):
            judge = StepJudge(protocol, gold)
            STEP_DIAGNOSERS.add(judge.name, functools.partial(StepJudge, protocol, gold), About(
                help=f"the LLM judge, Who&When's {protocol} protocol"
                     + (", shown the ground truth" if gold else "")))


_register()

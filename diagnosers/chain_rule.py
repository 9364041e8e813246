"""Control `chain-rule`: `trace-rule`, then the first hop whose sub-query drops the chain.

1. what `trace-rule` names on the hops: the first hop the agent retried or whose (last)
   attempt failed VERIFY → that hop, stage `retrieval`;
2. otherwise the first hop whose first sub-query does not carry what came before → that
   hop, stage `tool`. Hop k > 1 carries when every content word of hop k-1's finding
   (lower-cased word tokens of 3+ characters, not in `STOP`) is a word of its sub-query;
   hop 1 carries when its sub-query shares a capitalised word (3+ characters, not the
   question's first word; compared lower-cased) with the question. A finding with no
   content word, or a question with no capitalised word, carries vacuously;
3. otherwise `trace-rule`'s steps 2 and 3: hop n+1 when the trace stopped before the
   agent's configured hop budget (`view.hop_budget`), else hop 0: the trace flags nothing.

It reads only the observable trace (no gold, no probe): a gold-free diagnoser that does
not beat it has learned nothing that the agent's own flags and a word-overlap check on
its sub-queries would not already say.

Its default rank ties with `first-hop`'s; ties run in name order, so it runs right
after `trace-rule`.
"""

from __future__ import annotations

import re

from cuer_agent.trace import Trace

from ._base import Diagnosis, DiagnosisView, Probe, diagnoser
from .trace_rule import TraceRule

STOP = frozenset(
    "the and for are was were with that this from which what who whom whose where when "
    "how its his her their they them has had have not but into than then also one "
    "did does".split())
"""Words too common to say whether a finding was carried."""
WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    """Lower-cased word tokens of 3+ characters that are not stop words."""
    return {w for w in WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP}


def question_entities(question: str) -> set[str]:
    """The question's capitalised words of 3+ characters after its first word,
    lower-cased."""
    return {w.lower() for w in WORD.findall(question)[1:] if len(w) >= 3 and w[0].isupper()}


def carries(trace: Trace, i: int) -> bool:
    """Whether the first sub-query of hop i (0-based) carries what came before it: the
    previous hop's finding, or for the first hop an entity of the question."""
    asked = set(WORD.findall(trace.hops[i].first_attempt().subquery.lower()))
    if i == 0:
        entities = question_entities(trace.question)
        return not entities or bool(entities & asked)
    return content_words(trace.hops[i - 1].finding) <= asked


@diagnoser("chain-rule",
           help="control: trace-rule, then the first hop whose sub-query drops the "
                "previous finding",
           default_rank=13)
class ChainRule(TraceRule):
    control = True

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        flagged = super().diagnose(view, probe)  # trace-rule's verdict
        if flagged.stage == "retrieval":  # its step 1: a retried or unverified hop
            return flagged
        hops = view.trace.hops
        for i, hop in enumerate(hops):
            if not carries(view.trace, i):
                what = "the previous hop's finding" if i else "every entity of the question"
                return Diagnosis(hop=hop.hop, stage="tool", propagated=hop.hop < len(hops),
                                 cause=f"control: its sub-query drops {what}")
        return flagged  # trace-rule's steps 2 and 3: hop n+1 under the budget, else hop 0

"""The gold chain of a question: what each reasoning step must find, and where it is
stated. Hidden labels only: read to label a failure, never shown to the agent or a
diagnoser.

Per data set (`gold_chain`):

* MuSiQue — one step per `question_decomposition` entry: its `answer`; its supporting
  passage is the paragraph whose `idx` is `paragraph_support_idx` (`HopGold.support_index`);
* 2WikiMultihopQA — one step per `evidences` triple: its object; its supporting passage is
  the paragraph of the supporting-facts title matched to the triple's subject
  (`HopGold.support_title`, see `cuer_agent.data.twowiki`);
* the synthetic world — one step per fact of the question's chain: its value; its
  supporting passages are every passage of the world that states the fact
  (`FactSource.fact`);
* HotpotQA and any data set without per-step answers — no chain (a reason instead).

A step whose answer normalises to the question's final gold answer also accepts the final
answer's aliases (MuSiQue `answer_aliases`, the synthetic world's unformatted numbers).
Supporting passages are kept as *paragraph keys*: an evidence id without its chunk
number (`<sha1(title, paragraph)[:12]>`), so every chunk of a long paragraph counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuer_agent.data import Example
from cuer_agent.interventions.facts import FactSource
from cuer_agent.metrics.answer import normalize_answer
from cuer_agent.trace import evidence_id

_CHUNK = re.compile(r"-c[0-9]+$")

NO_STEPS = "no per-step gold answers (the data set gives supporting titles only)"
EMPTY_ANSWER = "a gold step has an empty answer"


@dataclass(frozen=True)
class GoldStep:
    """One step of a question's gold chain."""

    answers: tuple[str, ...]
    """The step's answer, then the aliases it accepts."""
    support: frozenset[str]
    """Paragraph keys (`paragraph_key`) of the passages that state the step's answer."""
    title: str | None
    """Title of the supporting passage, for traces whose ids follow another scheme."""


def paragraph_key(item_id: str) -> str:
    """An evidence id without its chunk number: the paragraph it came from."""
    return _CHUNK.sub("", item_id)


def _support(example: Example, step: int, facts: FactSource) -> frozenset[str]:
    gold = example.hops[step - 1]
    if gold.support_index is not None and gold.support_title is not None:
        return frozenset({paragraph_key(evidence_id(gold.support_title, gold.support_index))})
    fact = facts.fact(example, step)
    return frozenset(paragraph_key(i) for i in fact.passage_ids) if fact else frozenset()


def gold_chain(example: Example, facts: FactSource) -> tuple[GoldStep, ...] | str:
    """The example's gold chain, or why it has none (`NO_STEPS`, `EMPTY_ANSWER`)."""
    if not example.hops or all(h.answer is None for h in example.hops):
        return NO_STEPS
    final = normalize_answer(example.answer)
    steps = []
    for step, gold in enumerate(example.hops, start=1):
        answer = gold.answer or ""
        if not normalize_answer(answer):
            return EMPTY_ANSWER
        aliases = example.aliases if normalize_answer(answer) == final else ()
        steps.append(GoldStep((answer, *aliases), _support(example, step, facts),
                              gold.support_title))
    return tuple(steps)

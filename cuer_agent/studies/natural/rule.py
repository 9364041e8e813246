"""The labelling rule of natural failures: `gold-chain-walk`, version 2.

A *natural failure* is a clean run (no fault injected) whose final answer is wrong. Its
first-error hop is placed by walking the agent's hops against the gold chain
(`cuer_agent.studies.natural.chain`); nothing a diagnoser reads decides it.

* A hop's **finding** is the one its last attempt settled on; its **view** is every item
  any of its attempts retrieved.
* `norm` is the official SQuAD/HotpotQA answer normalisation. A finding **matches** an
  answer when the normalised answer is non-empty and equals the normalised finding, or
  occurs in it as a whole-word sequence.
* A step's supporting passage is **in view** of a hop when an item of the view comes from
  one of the step's supporting paragraphs, or has the step's support title and a text
  that contains the step's answer (for traces whose ids follow another scheme).

The walk keeps a pointer p to the first unresolved gold step (of m) and gives every hop a
verdict::

    for hop i = 1..n:
        if p > m: hop i is right, resolving no step   # all resolved: no error
        j = the smallest j >= p whose answer (or alias) hop i's finding matches
        if j: hop i is right, resolving step j; p = j + 1   # a later step resolves up to it
        else: hop i is wrong at step p — stage "retrieval" when no supporting passage of
              step p was in hop i's view, else "read" (none when step p has no known
              supporting passage); p stays
    the first wrong hop is the first error
    no wrong hop and p <= m  → hop n+1, stage "answer", kind "stopped-early"
    no wrong hop and p > m   → hop 0,   stage "answer", kind "answer"

Version 1 stopped at the first error; version 2 walks on with the same pointer, so the
first error is the same and every later hop is judged too: a hop after an error is right
only when its finding resolves the step still open (or a later one). A failure with two
or more wrong hops is a **cascade**.

A failure the rule cannot place is `Unplaced`, with its reason, never forced: no gold
chain (HotpotQA), or the erring step has no known supporting passage.

Examples (MuSiQue 2-hop "Where did the painter of X die?", chain [Lorenzo Costa → Mantua]):
hop 1 finds "Italian Renaissance" with X's paragraph retrieved → hop 1, read; hop 1 finds
"Lorenzo Costa", hop 2 finds "Bologna" without Costa's paragraph in view → hop 2,
retrieval; hop 1 finds "Lorenzo Costa" and the agent answers after one hop → hop 2
(n+1), stopped early; both hops resolve and the answer is "Costa" → hop 0, answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cuer_agent.metrics.answer import normalize_answer
from cuer_agent.studies.natural.chain import GoldStep, paragraph_key
from cuer_agent.trace import Evidence, HopRecord, Trace

RULE = "gold-chain-walk@2"
"""The rule's name and version, written into every label it makes."""

Kind = Literal["retrieval", "read", "stopped-early", "answer"]
NO_SUPPORT = "the erring step has no known supporting passage: its stage is undecidable"


@dataclass(frozen=True)
class FirstError:
    """Where a natural failure started."""

    hop: int
    """1..n a hop of the trace, n+1 the agent stopped early, 0 the answer step."""
    stage: Literal["retrieval", "read", "answer"]
    kind: Kind
    why: str
    """One line: what the walk saw."""


@dataclass(frozen=True)
class HopVerdict:
    """The walk's verdict on one hop."""

    hop: int
    right: bool
    """Its finding resolved a gold step, or every step was already resolved."""
    step: int | None
    """The gold step (1-based) it resolved (right) or left open (wrong); None for a hop
    after every step was resolved."""
    stage: Literal["retrieval", "read"] | None
    """A wrong hop: was the open step's supporting passage in its view (read) or not
    (retrieval); None for a right hop, or when the step has no known passage."""


@dataclass(frozen=True)
class Unplaced:
    """A failure the rule cannot place, and why."""

    reason: str


def contains(text: str, answer: str) -> bool:
    """`answer` equals `text` or occurs in it as a whole-word sequence, both normalised;
    an empty answer is contained nowhere."""
    needle, hay = normalize_answer(answer).split(), normalize_answer(text).split()
    if not needle:
        return False
    width = len(needle)
    return any(hay[i:i + width] == needle for i in range(len(hay) - width + 1))


def view(hop: HopRecord) -> tuple[Evidence, ...]:
    """Every item any attempt of the hop retrieved."""
    return tuple(item for attempt in (*hop.attempts, hop) for item in attempt.retrieved)


def in_view(step: GoldStep, items: Sequence[Evidence]) -> bool:
    """A supporting passage of `step` is among `items` (by paragraph, else by title and
    answer)."""
    return any(paragraph_key(item.id) in step.support
               or (step.title is not None and item.title == step.title
                   and any(contains(item.text, a) for a in step.answers))
               for item in items)


def resolved_step(finding: str, chain: Sequence[GoldStep], pointer: int) -> int | None:
    """The first step from `pointer` (0-based) whose answer the finding matches."""
    return next((j for j in range(pointer, len(chain))
                 if any(contains(finding, a) for a in chain[j].answers)), None)


def hop_verdicts(trace: Trace, chain: Sequence[GoldStep]) -> tuple[HopVerdict, ...]:
    """Every hop's verdict against the gold chain (the module's walk)."""
    pointer, verdicts = 0, []
    for hop in trace.hops:
        if pointer >= len(chain):
            verdicts.append(HopVerdict(hop.hop, True, None, None))
            continue
        j = resolved_step(hop.finding, chain, pointer)
        if j is not None:
            pointer = j + 1
            verdicts.append(HopVerdict(hop.hop, True, j + 1, None))
            continue
        step = chain[pointer]
        stage: Literal["retrieval", "read"] | None = None
        if step.support or step.title is not None:
            stage = "read" if in_view(step, view(hop)) else "retrieval"
        verdicts.append(HopVerdict(hop.hop, False, pointer + 1, stage))
    return tuple(verdicts)


def first_error(trace: Trace, chain: Sequence[GoldStep],
                verdicts: Sequence[HopVerdict] | None = None) -> FirstError | Unplaced:
    """Place a wrong-answer trace's first error on the gold chain (the module's walk;
    `verdicts`: `hop_verdicts` of the trace, when already walked)."""
    verdicts = hop_verdicts(trace, chain) if verdicts is None else verdicts
    wrong = next((v for v in verdicts if not v.right), None)
    if wrong is not None:
        if wrong.stage is None:
            return Unplaced(NO_SUPPORT)
        finding = trace.hops[verdicts.index(wrong)].finding
        return FirstError(wrong.hop, wrong.stage, wrong.stage,
                          f"hop {wrong.hop}'s finding {finding[:60]!r} resolves no step from "
                          f"{wrong.step} on; step {wrong.step}'s passage "
                          f"{'was' if wrong.stage == 'read' else 'was not'} in its view")
    resolved = max((v.step for v in verdicts if v.step is not None), default=0)
    if resolved < len(chain):
        return FirstError(len(trace.hops) + 1, "answer", "stopped-early",
                          f"the agent stopped after {len(trace.hops)} hops with step "
                          f"{resolved + 1} of {len(chain)} unresolved")
    return FirstError(0, "answer", "answer",
                      f"every step of {len(chain)} was resolved, the answer is still wrong")

"""The counterfactual probes on natural failures: each labelled failure re-executed by the
same agent, so `frozen-hop` and `suffix-regen` can repair one hop at a time with the
repairs the agent allows (`cuer_agent.interventions.repairs`).

What the probes read, declared:

* the **agent** (the study's own executor) and each example's retriever: the probes
  re-execute hops;
* an **answer oracle** for the oracle variants (`frozen-hop`, `suffix-regen`): a repaired
  run is fixed when its answer is right by the study's correctness against the gold
  answer (the setting Who&When calls "with ground truth"); the `-free` variants decide
  from the agent's own signals instead (`diagnosers._probing.supports_new_answer`);
* a **gold oracle** for the `gold-support` repair only: the supporting passage of the gold
  step the gold-chain walk left open at the repaired hop (`HopVerdict.step`), taken from
  the retriever's index, put at rank 1.

A probe needs the run's saved states, which a trace file does not hold: the failure is run
again from its example. With a repeatable backend (the extractive reader, a cached or
seeded model) that run is the observed one; when it is not, the failure is not probed and
the row says why (`RERUN_DIFFERS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuer_agent.config import StudyConfig
from cuer_agent.data import Dataset, Example
from cuer_agent.diagnosers._reexecution import ExecutionProbe, NaturalRepairs
from cuer_agent.execution import Executor
from cuer_agent.interventions.facts import FactSource, fact_source
from cuer_agent.metrics import recall_correct
from cuer_agent.retrieval import BM25Retriever, Retriever
from cuer_agent.studies.diagnose.labels import TraceLabel
from cuer_agent.studies.natural.chain import GoldStep, gold_chain, paragraph_key
from cuer_agent.trace import Evidence, Trace

RERUN_DIFFERS = ("the agent, run again from the example, did not repeat the observed run "
                 "(a backend that is not repeatable): a probe would repair another run")
SUPPORT_KEPT = 2
"""Most chunks of the supporting paragraph `gold-support` puts in view."""


@dataclass(frozen=True)
class NaturalProbing:
    """The agent and what the probes read (see the module docstring)."""

    executor: Executor
    retriever_for: Callable[[Example], Retriever]
    facts: FactSource
    threshold: float
    """The study's correctness threshold (token recall of a gold answer)."""
    budget: int
    """Hops a probe repairs (the study's `probe_budget`)."""

    def probe(self, example: Example, trace: Trace, label: TraceLabel) -> ExecutionProbe | str:
        """A probe of the failure `trace` of `example`, or why it cannot be probed."""
        retriever = self.retriever_for(example)
        run = self.executor.run(example, retriever)
        if run.trace.hops != trace.hops or run.trace.answer != trace.answer:
            return RERUN_DIFFERS

        def oracle(answer: str) -> bool:  # the answer oracle (reads gold)
            return bool(recall_correct(answer, example.gold_answers, threshold=self.threshold))

        names = tuple(self.executor.spec.repairs)
        support = _support_of(example, label, self.facts, retriever)
        # every repair at every probed hop (frozen-hop: a re-run and a re-answer each),
        # and the one-more-hop probe
        budget = 2 * len(names) * self.budget + 2
        return ExecutionProbe(self.executor, run, oracle, budget=budget,
                              natural=NaturalRepairs(names, support))


def natural_probing(executor: Executor, retriever_for: Callable[[Example], Retriever],
                    dataset: Dataset, config: StudyConfig) -> NaturalProbing:
    """The probing of a study's natural part: its agent, retrievers, gold facts,
    correctness threshold and probe budget."""
    return NaturalProbing(executor, retriever_for, fact_source(dataset),
                          config.propagation.recall_threshold, config.diagnose.probe_budget)


def _support_of(example: Example, label: TraceLabel, facts: FactSource,
                retriever: Retriever) -> Callable[[int], Sequence[Evidence] | None]:
    """Hop j → the supporting passage of the gold step left open there (None: unknown)."""
    chain = gold_chain(example, facts)
    open_steps = {v.hop: v.step for v in label.hop_verdicts or () if v.step is not None}

    def support(j: int) -> Sequence[Evidence] | None:
        step = open_steps.get(j)
        if isinstance(chain, str) or step is None or not isinstance(retriever, BM25Retriever):
            return None
        found = _passages(chain[step - 1], retriever)
        return found or None
    return support


def _passages(step: GoldStep, retriever: BM25Retriever) -> list[Evidence]:
    """The indexed chunks of the step's supporting paragraphs (rank 1 on)."""
    chunks = [c for c in retriever.chunks if paragraph_key(c.id) in step.support]
    return [c.to_evidence(rank=rank) for rank, c in enumerate(chunks[:SUPPORT_KEPT], start=1)]

"""`summary.reader`: how much of the agent's accuracy its reader's word table carries.

The offline reader knows one table of English relation words
(`cuer_agent.llm._reading.RELATION_GROUPS`). A table that drifted toward the synthetic
generator's own phrasing would make the clean accuracy a property of who wrote both; so
every evaluate run with the extractive backend runs the clean agent a second time with
the table switched off (5-letter prefixes only) and reports both accuracies. With
another backend (a language model) there is no table: only the clean accuracy.

Correctness is the propagation study's (normalised EM, or token recall of the gold answer
>= `recall_threshold`), so the two figures compare with the agentic clean accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuer_agent.data import Dataset, Example
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.llm._reading import RELATION_GROUPS
from cuer_agent.llm.backends import SkillClient
from cuer_agent.metrics import recall_correct
from cuer_agent.metrics.stats import wilson_interval
from cuer_agent.parallel import Parallelism, ordered_map
from cuer_agent.studies.evaluate.summary_model import Accuracy, ReaderCheck

__all__ = ["reader_summary"]


class _Clean:
    """One clean run of the table-off reader: is it correct? (picklable)."""

    def __init__(self, executor: Executor, retriever_for: Any, threshold: float) -> None:
        self.executor, self.retriever_for, self.threshold = executor, retriever_for, threshold

    @property
    def ledger(self) -> Any:
        return self.executor.skills.ledger

    def __call__(self, example: Example) -> bool:
        trace = self.executor.run(example, self.retriever_for(example)).trace
        return bool(recall_correct(trace.answer, example.gold_answers,
                                   threshold=self.threshold))


def _share(hits: int, n: int) -> Accuracy:
    return Accuracy(accuracy=round(hits / n, 6) if n else None,
                    ci=wilson_interval(hits, n) if n else None)


def reader_summary(dataset: Dataset, skills: SkillClient, agent: AgentConfig,
                   clean_correct: list[float], retriever_for: Callable[[Example], Any], *,
                   threshold: float = 0.8, parallel: Parallelism | int = 1) -> ReaderCheck:
    """The reader's figures: its clean accuracy (`clean_correct`: the agentic clean runs)
    and, for the extractive backend, the same agent's with its relation table off."""
    from cuer_agent.llm.extractive import ExtractiveBackend

    backend = skills.backend
    relation_table = isinstance(backend, ExtractiveBackend)  # the one reader that has one
    clean = _share(int(sum(clean_correct)), len(clean_correct))
    without: Accuracy | None = None
    if relation_table:
        plain = SkillClient(ExtractiveBackend(backend.model, relation_table=False),
                            cache=skills.cache)
        task = _Clean(Executor(plain, agent), retriever_for, threshold)
        correct = list(ordered_map(task, dataset.examples, parallel))
        without = _share(sum(correct), len(correct))
    return ReaderCheck(
        backend=backend.name, model=backend.model, version=getattr(backend, "version", ""),
        n=len(clean_correct), accuracy=clean.accuracy, ci=clean.ci,
        without_relation_table=without,
        relation_groups=len(RELATION_GROUPS) if relation_table else 0,
        relation_words=(sum(len(words.split()) for _, _, words in RELATION_GROUPS)
                        if relation_table else 0))

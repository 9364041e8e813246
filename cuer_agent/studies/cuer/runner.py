"""The single-shot CUE-R study: perturb one evidence item, re-run, measure four axes.

For each example the single-shot system runs once (the *original*); then, for every
condition (REMOVE / REPLACE / DUPLICATE on the CUE-R target, the zero-retrieval and
random-target controls, and any ablation conditions), the run is forked after
`retrieve` with the edited evidence and only `answer` runs again. Each counterfactual
is scored on correctness (soft; EM and F1 too), grounding, confidence error, and its
divergence D from the original.

Rows are appended per example (`traces.jsonl`: record + trace; `records.jsonl`: record
+ metrics); a rerun resumes after the last complete example. `summary.json` is computed
from the rows alone (`cuer_agent.studies.cuer.summary`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import TypeAdapter
from rich.progress import Progress
from typing_extensions import TypedDict

from cuer_agent._json import JsonRow
from cuer_agent.config import CuerConfig
from cuer_agent.data import Dataset, Example
from cuer_agent.execution import Executor, RunResult, replace_evidence
from cuer_agent.interventions import (
    ConditionInput,
    ConditionParams,
    InterventionRecord,
    ReplacementPool,
    get_condition,
)
from cuer_agent.llm.cache import Ledger
from cuer_agent.metrics import answer_scores
from cuer_agent.metrics.utility import (
    DivergenceWeights,
    confidence_error,
    divergence_parts,
    grounding,
    weigh,
)
from cuer_agent.parallel import Parallelism, fan_out, ordered_map
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.run_dir import RunDir, checked_rows, example_of, request_failed
from cuer_agent.studies._common.dataset_run import TraceRow as RunTraceRow
from cuer_agent.studies._common.dataset_run import trace_fields
from cuer_agent.studies._common.records import RecordData, record_data
from cuer_agent.trace import Trace

TRACES, RECORDS = "traces.jsonl", "records.jsonl"
AXES = ("correctness", "em", "f1", "grounding", "confidence_error", "divergence")


class TraceRow(RunTraceRow):
    """A row of traces.jsonl: one run (the original or a condition's fork)."""

    record: RecordData


class RecordRow(TypedDict):
    """A row of records.jsonl: a condition's record and its run's axes (`trace_axes`),
    None when the condition did not apply (skipped)."""

    record: RecordData
    metrics: dict[str, float] | None


_RECORD_ROWS = TypeAdapter(list[RecordRow])


def record_rows(rows: Iterable[JsonRow], source: str | Path) -> list[RecordRow]:
    """Rows of records.jsonl as read from `source` (`RunDir.rows`), validated
    (`cuer_agent.run_dir.checked_rows`: a row of another shape is a `DataError`)."""
    return checked_rows(rows, _RECORD_ROWS, source)


def trace_axes(trace: Trace, example: Example, original: Trace | None,
               config: CuerConfig) -> dict[str, float]:
    """The four axes (plus EM and F1) of one trace; D against `original` (0 for itself)."""
    scores = answer_scores(trace.answer, example.gold_answers, f1_threshold=config.f1_threshold)
    parts = (0.0, 0.0, 0.0) if original is None else divergence_parts(
        original.used_ids, original.answer, original.confidence,
        trace.used_ids, trace.answer, trace.confidence)
    in_view = [ev.text.lower() for hop in trace.hops for ev in hop.retrieved]
    answer = trace.answer.strip().lower()
    supported = float(bool(answer) and any(answer in text for text in in_view))
    return {"correctness": scores["soft"], "em": scores["em"], "f1": scores["f1"],
            "answer_supported": supported,
            "grounding": grounding(trace.used_titles(), example.supporting_titles),
            "confidence_error": confidence_error(trace.confidence, scores["soft"]),
            "divergence": weigh(parts, DivergenceWeights(*config.divergence_weights)),
            "d_used": parts[0], "d_answer": parts[1], "d_confidence": parts[2]}


@dataclasses.dataclass(frozen=True)
class CuerTask:
    """One example's original run and every condition, as (example id, rows); picklable,
    for worker processes."""

    executor: Executor
    config: CuerConfig
    retriever_for: Callable[[Example], BM25Retriever]

    @property
    def ledger(self) -> Ledger:
        return self.executor.skills.ledger

    def __call__(self, example: Example
                 ) -> tuple[str, list[tuple[TraceRow | None, RecordRow]]]:
        return example.id, _example_rows(example, self.executor, self.config,
                                         self.config.conditions(), self.retriever_for(example))


def run_cuer(dataset: Dataset, executor: Executor, run_dir: RunDir, config: CuerConfig, *,
             retriever_for: Callable[[Example], BM25Retriever],
             show_progress: bool = True, parallel: Parallelism | int = 1) -> set[str]:
    """Run every example not yet complete in `run_dir`; returns the complete example ids."""
    expected = 1 + len(config.conditions())
    done = _complete_examples(run_dir, expected)
    todo = [ex for ex in dataset.examples if ex.id not in done]
    kept = set(done)
    task = CuerTask(executor, config, retriever_for)
    with Progress(disable=not show_progress, transient=True) as progress:
        bar = progress.add_task("CUE-R", total=len(dataset.examples), completed=len(done))
        for example_id, rows in ordered_map(task, todo, parallel):
            # Traces first: an example counts as complete once all its records are in.
            run_dir.append_rows(TRACES, [t for t, _ in rows if t is not None])
            run_dir.append_rows(RECORDS, [r for _, r in rows])
            done.add(example_id)
            progress.advance(bar)
    run_dir.restore_data_order((RECORDS, TRACES), [ex.id for ex in dataset.examples], kept)
    return done


def _example_rows(example: Example, executor: Executor, config: CuerConfig,
                  conditions: list[tuple[str, str, ConditionParams]],
                  retriever: BM25Retriever) -> list[tuple[TraceRow | None, RecordRow]]:
    base = executor.run(example, retriever)
    original = base.trace
    rows = [_rows(InterventionRecord(record_id=f"{example.id}/original", example_id=example.id,
                                     condition="original", operator="NONE"),
                  base, example, None, config)]
    evidence = original.hops[0].retrieved if original.hops else ()
    pool = ReplacementPool(retriever, example.supporting_titles)

    def condition_rows(condition: tuple[str, str, ConditionParams]
                       ) -> tuple[TraceRow | None, RecordRow]:
        name, registered, params = condition
        inp = ConditionInput(example_id=example.id, question=example.question,
                             evidence=evidence, used_ids=original.used_ids,
                             gold_titles=example.supporting_titles, pool=pool,
                             seed=config.seed, params=params)
        if not evidence:
            record = InterventionRecord(record_id=f"{example.id}/{name}", example_id=example.id,
                                        condition=name, operator="NONE",
                                        skipped="empty retrieval")
            return None, {"record": record_data(record), "metrics": None}
        edited, record = get_condition(registered)(inp, name)
        if edited is None:
            return None, {"record": record_data(record), "metrics": None}
        fork = executor.fork(base, 1, "retrieve", replace_evidence(edited))
        return _rows(record, fork, example, original, config)

    return rows + fan_out(condition_rows, conditions)  # the forks are independent


def _rows(record: InterventionRecord, result: RunResult, example: Example,
          original: Trace | None, config: CuerConfig) -> tuple[TraceRow, RecordRow]:
    rec = record_data(record)
    metrics = trace_axes(result.trace, example, original, config)
    return {"record": rec, **trace_fields(result)}, {"record": rec, "metrics": metrics}


def _complete_examples(run_dir: RunDir, expected: int) -> set[str]:
    """Examples with all their rows and no trace a failed request cut short
    (`request_failed`); rows of other examples (half-written, or failed by the server) are
    dropped so that the rerun writes them once."""
    records = run_dir.rows(RECORDS)
    counts = Counter(row["record"]["example_id"] for row in records)
    # Every record row with metrics has its trace row (skipped conditions have neither).
    traced = Counter(row["record"]["example_id"] for row in records
                     if row["metrics"] is not None)
    trace_rows = run_dir.rows(TRACES)
    traces = Counter(example_of(row) for row in trace_rows)
    complete = {ex for ex, c in counts.items() if c == expected and traces[ex] == traced[ex]}
    complete -= request_failed(trace_rows)  # the server's failure, not the agent's: redo
    # A cut-off example may have trace rows and no record row yet: prune both files.
    run_dir.keep_examples(RECORDS, complete, records)
    run_dir.keep_examples(TRACES, complete, trace_rows)
    return complete

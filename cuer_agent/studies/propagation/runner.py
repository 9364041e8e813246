"""The agentic fault-propagation study: inject a fault at hop h, let the agent re-execute.

For each example the agent runs once (the *clean* run). For each fault and each hop h
the example is eligible for (paper-notes §B: the clean trace reached h hops; in strict
mode, the default, the clean answer was also correct), the fault is made a condition of
the run's tools (`cuer_agent.interventions.persistence`, held under
`fault_persistence`), the clean run is forked just before the fault meets hop h's first
attempt, and the same agent re-executes the suffix — noticing the fault (VERIFY) and
retrying the hop differently, or not. The per-hop CUE-R operators (REMOVE / REPLACE /
DUPLICATE on hop h's target) run the same way, keyed to hop h's sub-query. Every
counterfactual is stored with its intervention record, which carries the persistence.

A retrieval fault is by default a state of the corpus from hop h on
(`fault_persistence = "corpus"`: passages withheld, added or edited in the index), so a
retry, a later hop or a probe searches the same changed world. Each record says the
faulted fact's redundancy (in how many passages the world states it) and the hop at
which a faulted item first changed what the agent saw (`first_hit`; the label stays h).

An injection is **effective** when hop h's first attempt found something else than the
clean run's, or selected other items (or hop h never ran). Recovery is reported over
every injection and over the effective ones, next to the **control**: the same
injection with the agent's retries switched off (`retries_control`; for an agent that
does not retry, or a fork that never retried, the control is the run itself). VERIFY's
verdict on hop h's faulted first attempt (`verify_fired`) gives its detection rate; its
verdicts on the clean runs' hops give its false-alarm rate. A fork that ended in a
request error or a parse failure (`status`, stored on its record row) is neither
recovered nor failed: it is counted apart and never diagnosed.

Correctness here is the propagation study's: normalised EM, or token recall of the
gold answer in the prediction >= 0.8.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.progress import Progress

from cuer_agent._json import JsonRow
from cuer_agent.config import PropagationConfig
from cuer_agent.data import Dataset, Example
from cuer_agent.execution import (
    Executor,
    RunResult,
    identity,
    replace_evidence,
    without_retries,
)
from cuer_agent.interventions import (
    ConditionInput,
    CorpusItem,
    FaultInput,
    FaultOutcome,
    FaultSpec,
    ReplacementPool,
    get_condition,
    get_fault,
)
from cuer_agent.interventions.facts import FactSource, PoolFacts, fact_source
from cuer_agent.interventions.persistence import (
    Persistence,
    edit_condition,
    held_as,
)
from cuer_agent.llm.cache import Ledger
from cuer_agent.metrics import recall_correct
from cuer_agent.parallel import Parallelism, fan_out, ordered_map
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.run_dir import RunDir, example_of, request_failed
from cuer_agent.studies._common.records import RecordData, record_data
from cuer_agent.studies.propagation.injection import (
    effective,
    first_attempt,
    first_hit,
    inject,
    prefix_skill_calls,
    retried,
    retried_after,
    run_metrics,
    verify_fired,
)
from cuer_agent.studies.propagation.rows import ForkMetrics, ForkRow
from cuer_agent.studies.propagation.tampering_outcomes import query_contaminated, tampering_outcome
from cuer_agent.trace import Trace

TRACES, RECORDS, DIAGNOSES = "traces.jsonl", "records.jsonl", "diagnoses.jsonl"
OnFailed = Callable[[Example, FaultSpec | None, int, RunResult], Sequence[JsonRow]]
"""Called with (example, fault spec, hop, fork) for each injected run that still fails —
and with (example, None, 0, clean run) for each clean, correct, unfaulted run, the base
rate a diagnoser should name no hop on; returns diagnosis rows (the evaluate command
diagnoses there, while the run is live). A run that ended in a request error or a parse
failure is never diagnosed."""
HOP_OPERATORS = ("remove", "replace", "duplicate")


class _Injector:
    """Per-example context shared by every fault and hop of that example."""

    def __init__(self, example: Example, base: RunResult, retriever: BM25Retriever,
                 distractors: list[str], config: PropagationConfig,
                 facts: FactSource | None = None) -> None:
        self.example, self.base, self.config = example, base, config
        self.retriever = retriever
        self.corpus = [CorpusItem(c.id, c.title, c.text) for c in retriever.chunks]
        self.distractors = distractors
        self.facts = facts if facts is not None else PoolFacts()

    def fault_input(self, hop: int, k: int) -> FaultInput:
        """What a fault at hop `hop` meets: the clean run's *first attempt* at that hop."""
        clean = self.base.trace
        record = first_attempt(clean, hop)
        retriever = self.retriever

        return FaultInput(
            example_id=self.example.id, question=self.example.question, hop=hop,
            subquery=record.subquery if record else "",
            evidence=record.retrieved if record else (),
            later_subqueries=[h.subquery for h in clean.hops[hop:]], corpus=self.corpus,
            seed=self.config.seed, gold_answers=self.example.gold_answers,
            distractor_answers=self.distractors, score=retriever.score_text,
            search=retriever.retrieve,
            known_ids=retriever.ids, max_paragraph=retriever.max_paragraph, k=k,
            finding=record.finding if record else "",
            selected=record.selected if record else (),
            fact=self.facts.fact(self.example, hop), facts=self.facts)


def example_rows(example: Example, executor: Executor, retriever: BM25Retriever,
                 distractors: list[str], config: PropagationConfig,
                 on_failed: OnFailed | None = None,
                 facts: FactSource | None = None) -> list[ForkRow]:
    """Every row of one example: the clean run, then each fault × hop, then hop operators
    (`ForkRow`)."""
    base = executor.run(example, retriever)
    clean = base.trace
    clean_metrics = run_metrics(clean, clean, example, config)
    clean_row = _fork_row(_record(example, "clean", 0, ""), base, clean_metrics)
    # VERIFY's verdict on each clean hop's first attempt: its false alarms.
    clean_row["verify"] = [verify_fired(clean, h.hop) for h in clean.hops]
    if on_failed is not None and clean.status == "ok" and clean_metrics["correct"]:
        clean_row["diagnoses"] = list(on_failed(example, None, 0, base))
    rows = [clean_row]
    injector = _Injector(example, base, retriever, distractors, config, facts)
    budget = executor.config.hop_budget
    k = executor.config.k

    def fault_row(cell: tuple[str, int]) -> ForkRow:
        name, hop = cell
        spec = get_fault(name)
        why = _ineligible(clean, clean_metrics, hop, config)
        if why:
            return _skipped(example, name, hop, why)
        inp = injector.fault_input(hop, k)
        outcome = spec.apply(inp)
        held = held_as(spec, config.fault_persistence, outcome)
        record = record_data(outcome.record.model_copy(update={
            "params": {**outcome.record.params, "persistence": held}}))
        if not outcome.applied:
            return {"record": record, "trace": None, "metrics": None}
        fork = inject(executor, base, spec, inp, outcome, held)
        metrics = run_metrics(fork.trace, clean, example, config)
        metrics["prefix_calls"] = float(prefix_skill_calls(fork, hop))
        metrics["effective"] = float(effective(fork.trace, clean, hop))
        metrics["retried"] = float(retried(fork.trace, hop))
        metrics["verify_fired"] = float(verify_fired(fork.trace, hop))
        hit = first_hit(fork.trace, hop, retriever, k, spec.boundary)
        metrics["first_hit"] = float(hit) if hit is not None else -1.0
        control = _control(executor, base, spec, inp, outcome, held, fork, config)
        if control is not None:
            metrics["control_correct"] = float(recall_correct(
                control.trace.answer, example.gold_answers, threshold=config.recall_threshold))
            metrics["control_same_run"] = float(control is fork)
        row = _fork_row(record, fork, metrics)
        if outcome.record.certificate:
            row["tampering"] = tampering_outcome(
                bool(metrics["correct"]), fork.trace.answer, outcome.record.certificate)
            row["contaminated"] = query_contaminated(
                outcome.record.certificate["new_span"],
                [h.subquery for h in fork.trace.hops[hop:]])
        if on_failed is not None and not metrics["correct"] and fork.trace.status == "ok":
            row["diagnoses"] = list(on_failed(example, spec, hop, fork))
        return row

    # Every fault × hop forks the same clean run independently: they may run at once.
    rows += fan_out(fault_row, [(name, hop) for name in config.faults
                                for hop in range(1, budget + 1)])
    if config.hop_operators:
        rows += _operator_rows(example, executor, base, retriever, clean_metrics, config)
    return rows


def _control(executor: Executor, base: RunResult, spec: FaultSpec, inp: FaultInput,
             outcome: FaultOutcome, held: Persistence, fork: RunResult,
             config: PropagationConfig) -> RunResult | None:
    """The same injection with the agent's retries off, or None when there is none to
    run: the control is off, the agent does not retry, or the fault forces the stop.
    A fork that never retried from hop h on makes the same decisions without retries:
    with repeatable skills it is its own control."""
    if (not config.retries_control or executor.spec.retries_key is None
            or executor.config.retries_per_hop == 0 or spec.boundary == "read"):
        return None
    if executor.skills.repeatable and fork.trace.status == "ok" and not retried_after(
            fork.trace, inp.hop):
        return fork
    return inject(executor, base, spec, inp, outcome, held, then=without_retries)


def _operator_rows(example: Example, executor: Executor, base: RunResult,
                   retriever: BM25Retriever, clean_metrics: ForkMetrics,
                   config: PropagationConfig) -> list[ForkRow]:
    clean = base.trace
    rows: list[ForkRow] = []
    pool = ReplacementPool(retriever, example.supporting_titles)
    persistence = "once" if config.fault_persistence == "once" else "query"
    for hop in range(1, executor.config.hop_budget + 1):
        for name in HOP_OPERATORS:
            condition = f"hop_{name}"
            why = _ineligible(clean, clean_metrics, hop, config, strict=False)
            if why:
                rows.append(_skipped(example, condition, hop, why))
                continue
            record = first_attempt(clean, hop)
            assert record is not None  # eligible: the clean run reached hop h
            gold = example.hops[hop - 1].support_title if hop <= len(example.hops) else None
            inp = ConditionInput(
                example_id=example.id, question=record.subquery,
                evidence=record.retrieved,
                used_ids=record.selected, gold_titles={gold} if gold else set(), pool=pool,
                seed=config.seed, hop=hop, score=retriever.score_text)
            edited, rec = get_condition(name)(inp, condition)
            rec = rec.model_copy(update={"record_id": f"{example.id}/{condition}@{hop}",
                                         "params": {**rec.params, "persistence": persistence}})
            if edited is None:
                rows.append({"record": record_data(rec), "trace": None, "metrics": None})
                continue
            if persistence == "once":
                fork = executor.fork(base, hop, "retrieve", replace_evidence(edited),
                                     condition=None)
            else:  # the edit holds whenever hop h's sub-query is asked (a retry too)
                fork = executor.fork(base, hop, "plan", identity,
                                     condition=edit_condition(hop, record.subquery, edited))
            metrics = run_metrics(fork.trace, clean, example, config)
            metrics["prefix_calls"] = float(prefix_skill_calls(fork, hop))
            rows.append(_fork_row(record_data(rec), fork, metrics))
    return rows


def _ineligible(clean: Trace, clean_metrics: ForkMetrics, hop: int,
                config: PropagationConfig, *, strict: bool | None = None) -> str:
    if len(clean.hops) < hop:
        return "clean trace has fewer hops"
    if (config.strict if strict is None else strict) and not clean_metrics["correct"]:
        return "clean answer wrong (strict)"
    return ""


def _record(example: Example, condition: str, hop: int, skipped: str) -> RecordData:
    """The short record of a clean run (hop 0) or of a condition skipped at a hop."""
    return {"record_id": f"{example.id}/{condition}" + (f"@{hop}" if hop else ""),
            "example_id": example.id, "condition": condition, "operator": "NONE",
            "hop": hop, "skipped": skipped}


def _fork_row(record: RecordData, result: RunResult, metrics: ForkMetrics) -> ForkRow:
    return {"record": record, "trace": result.trace.model_dump(mode="json"),
            "status": result.trace.status,
            "request_keys": result.request_keys, "spent": result.spent, "metrics": metrics}


def _skipped(example: Example, condition: str, hop: int, reason: str) -> ForkRow:
    return {"record": _record(example, condition, hop, reason), "trace": None,
            "metrics": None}


def distractor_answers(dataset: Dataset, example: Example, limit: int) -> list[str]:
    """Gold answers of other examples (entity distractors for tampering), in data order."""
    return pick_distractors(answer_pool(dataset), example.id, limit)


def answer_pool(dataset: Dataset) -> tuple[tuple[str, str], ...]:
    """(example id, gold answer) in data order: all a worker needs for the distractors,
    without the examples' passages."""
    return tuple((ex.id, ex.answer) for ex in dataset.examples)


def pick_distractors(pool: tuple[tuple[str, str], ...], example_id: str,
                     limit: int) -> list[str]:
    return [answer for other, answer in pool if other != example_id][:limit]


@dataclass(frozen=True)
class PropagationTask:
    """Every row of one example, as (example id, rows); picklable, for worker processes
    (the `on_failed` hook travels with it and runs where the fork lives)."""

    executor: Executor
    config: PropagationConfig
    retriever_for: Callable[[Example], BM25Retriever]
    answers: tuple[tuple[str, str], ...]
    on_failed: OnFailed | None = None
    facts: FactSource | None = None

    @property
    def ledger(self) -> Ledger:
        return self.executor.skills.ledger

    def __call__(self, example: Example) -> tuple[str, list[ForkRow]]:
        distractors = pick_distractors(self.answers, example.id, self.config.distractor_pool)
        return example.id, example_rows(example, self.executor, self.retriever_for(example),
                                        distractors, self.config, self.on_failed, self.facts)


def run_propagation(dataset: Dataset, executor: Executor, run_dir: RunDir,
                    config: PropagationConfig, *,
                    retriever_for: Callable[[Example], BM25Retriever],
                    show_progress: bool = True, on_failed: OnFailed | None = None,
                    parallel: Parallelism | int = 1) -> None:
    """Run every example not yet complete in `run_dir`. Rows go to records.jsonl (record
    + metrics) and traces.jsonl (record + trace); a half-written or damaged example is
    dropped and redone, so no row is duplicated or lost."""
    done = _complete(run_dir)
    todo = [ex for ex in dataset.examples if ex.id not in done]
    task = PropagationTask(executor, config, retriever_for, answer_pool(dataset), on_failed,
                           fact_source(dataset))
    with Progress(disable=not show_progress, transient=True) as progress:
        bar = progress.add_task("propagation", total=len(dataset.examples),
                                completed=len(done))
        for example_id, rows in ordered_map(task, todo, parallel):
            traces = [{"record": row["record"], "trace": row["trace"],
                       "request_keys": row["request_keys"], "spent": row["spent"]}
                      for row in rows if row["trace"] is not None]
            diagnoses = [d for row in rows for d in row.get("diagnoses", [])]
            run_dir.append_rows(TRACES, traces)
            run_dir.append_rows(DIAGNOSES, diagnoses)
            records = [{k: v for k, v in row.items()
                        if k not in ("trace", "request_keys", "spent", "diagnoses")}
                       for row in rows]
            # The closing row, written last, says how many rows each file holds for this
            # example, so a damaged row of a finished example is noticed and redone.
            run_dir.append_rows(RECORDS, [*records, {
                "record": {"record_id": f"{example_id}/done", "example_id": example_id,
                           "condition": "done"}, "metrics": None,
                "rows": {RECORDS: len(rows), TRACES: len(traces),
                         DIAGNOSES: len(diagnoses)}}])
            progress.advance(bar)
    run_dir.restore_data_order((RECORDS, TRACES, DIAGNOSES),
                               [ex.id for ex in dataset.examples], done)


def _complete(run_dir: RunDir) -> set[str]:
    """Examples whose closing "done" row is written, whose rows are all there, and none
    of whose traces a failed request cut short (`request_failed`); other rows are dropped
    (an example cut off mid-write, damaged since, or failed by the server) and redone."""
    files = {name: run_dir.rows(name) for name in (RECORDS, TRACES, DIAGNOSES)}
    closing = {r["record"]["example_id"]: r.get("rows") for r in files[RECORDS]
               if r["record"]["condition"] == "done"}
    done = set(closing) - request_failed(files[TRACES])  # the server's failure: redo
    for name, rows in files.items():
        held = Counter(example_of(r) for r in rows
                       if r.get("record", {}).get("condition") != "done")
        done -= {ex for ex, counts in closing.items()
                 if counts is not None and held[ex] != counts[name]}
    for name, rows in files.items():
        run_dir.keep_examples(name, done, rows)
    return done

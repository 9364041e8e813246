"""`cuer-agent evaluate`: the single-shot CUE-R baseline, the agentic fault-propagation
study, and the diagnoser comparison, into one run directory.

Layout: `config.json`, `single_shot/` (a CUE-R run directory), `agentic/` (a propagation
run directory, plus `diagnoses.jsonl`: one row per diagnoser per injected run that still
failed, and per clean, correct run with `fault` "none"), `natural/` (the clean runs that
ended wrong, labelled from the gold chain and diagnosed: `cuer_agent.studies.natural`),
`summary.json`, `report.md`, `report.html`. Every part resumes where it stopped.

Diagnosers run on every injected run that still fails and on every clean, correct,
unfaulted run (`cuer_agent.studies.diagnose.runner`); their summaries
(`diagnose.summary`), the per-example comparison (`comparison`), the caveats
(`evaluate.caveats`) and the provenance of the run (`provenance`) go into `summary.json`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuer_agent._json import JsonRow
from cuer_agent.config import StudyConfig
from cuer_agent.data import Dataset
from cuer_agent.llm.backends import SkillClient
from cuer_agent.parallel import Parallelism
from cuer_agent.provenance import Provenance
from cuer_agent.run_dir import RunDir
from cuer_agent.studies._common.dataset_run import ledger_from_rows, retriever_factory, skill_spend
from cuer_agent.studies._common.pools import single_shot_data
from cuer_agent.studies._common.recorded_config import cuer_record, open_run_dir, propagate_record
from cuer_agent.studies._common.session import agent_executor, single_shot_executor
from cuer_agent.studies._common.summary_model import extended
from cuer_agent.studies.cuer.report import cuer_summary
from cuer_agent.studies.cuer.runner import RECORDS as CUER_RECORDS
from cuer_agent.studies.cuer.runner import TRACES as CUER_TRACES
from cuer_agent.studies.cuer.runner import run_cuer
from cuer_agent.studies.diagnose.runner import DiagnoseFailed, build_diagnosers, diagnosis_rows
from cuer_agent.studies.diagnose.summary import constant_guesses, diagnoser_summaries
from cuer_agent.studies.evaluate.caveats import honest_caveats
from cuer_agent.studies.evaluate.comparison import compare_analyses
from cuer_agent.studies.evaluate.disagreement import world_disagreement
from cuer_agent.studies.evaluate.reader_check import reader_summary
from cuer_agent.studies.evaluate.summary_model import (
    EvaluateLedger,
    EvaluateResults,
    EvaluateSummary,
    NoProvenance,
    SingleShot,
)
from cuer_agent.studies.natural.probes import natural_probing
from cuer_agent.studies.natural.runner import NATURAL, run_natural
from cuer_agent.studies.propagation.invisibility import invisibility
from cuer_agent.studies.propagation.rows import TraceRow, record_rows, trace_rows
from cuer_agent.studies.propagation.runner import DIAGNOSES, RECORDS, TRACES, run_propagation
from cuer_agent.studies.propagation.summary import summarize_propagation, verify_rates
from cuer_agent.trace import Trace


def run_evaluate(dataset: Dataset, skills: SkillClient, run_dir: RunDir, config: StudyConfig,
                 *, show_progress: bool = True, parallel: Parallelism | int = 1,
                 provenance: Provenance | None = None) -> EvaluateSummary:
    """Run the three studies and the diagnosers into `run_dir`, write `summary.json`,
    and return it as its model."""
    diagnosers = build_diagnosers(config, skills)
    retriever_for = retriever_factory(dataset)

    data = config.data.model_dump(mode="json")
    backend = config.backend.model_dump(mode="json")
    single_dir = open_run_dir(run_dir.path / "single_shot", cuer_record(
        source=dataset.source, data=data, backend=backend, cuer=config.cuer))
    single = single_shot_executor(config, skills)
    per_hop = config.cuer.asks_per_hop()
    single_data = single_shot_data(dataset, config.cuer.questions, config.cuer.pool_size)
    run_cuer(single_data, single, single_dir, config.cuer,
             retriever_for=retriever_factory(single_data),
             show_progress=show_progress, parallel=parallel)
    single_summary = single_dir.write_model(cuer_summary(single_dir, config.cuer))

    agentic_dir = open_run_dir(run_dir.path / "agentic", propagate_record(
        source=dataset.source, hops=config.agent.hops,
        retries_per_hop=config.agent.retries_per_hop, agent=config.agent.factory,
        k=config.agent.k, data=data, backend=backend, propagation=config.propagation))
    agent = agent_executor(config, skills)
    run_propagation(dataset, agent, agentic_dir, config.propagation,
                    retriever_for=retriever_for, show_progress=show_progress,
                    on_failed=DiagnoseFailed(diagnosers, agent, config),
                    parallel=parallel)
    traces = agentic_dir.rows(TRACES)
    records = agentic_dir.rows(RECORDS)
    typed_traces = trace_rows(traces, agentic_dir.path / TRACES)
    typed_records = record_rows(records, agentic_dir.path / RECORDS)
    agentic = summarize_propagation(typed_records, typed_traces, config.propagation)

    clean_correct = [metrics["correct"] for r in typed_records
                     if r["record"]["condition"] == "clean"
                     and (metrics := r["metrics"]) is not None]
    reader = reader_summary(dataset, skills, agent.config, clean_correct, retriever_for,
                            threshold=config.propagation.recall_threshold, parallel=parallel)
    natural = run_natural(clean_traces(typed_traces, traces), dataset, diagnosers,
                          run_dir.path / NATURAL, config, skills, hop_budget=config.agent.hops,
                          concurrency=_concurrency(parallel),
                          probing=natural_probing(agent, retriever_for, dataset, config))
    diagnoses = diagnosis_rows(agentic_dir, DIAGNOSES)
    ledger = extended(ledger_from_rows(single_dir.rows(CUER_TRACES) + traces), EvaluateLedger,
                      diagnoser_requests=sum(r["calls"] for r in diagnoses),
                      diagnoser_errors=sum(1 for r in diagnoses if r["error"]),
                      diagnoser_by_skill=skill_spend(
                          [*diagnoses, *RunDir(run_dir.path / NATURAL).rows(DIAGNOSES)]))
    # Each part is given as the keys its study computed (a dict is validated into its
    # model), so `write_model` writes exactly those keys; `config` in full, as recorded.
    results = EvaluateResults(
        single_shot=extended(single_summary, SingleShot,
                             questions="per_hop" if per_hop else "whole"),
        agentic=agentic, verify=verify_rates(typed_records, config.propagation.faults),
        invisibility=invisibility(typed_traces, config.propagation.faults), reader=reader,
        comparison=compare_analyses(single_dir.rows(CUER_RECORDS), records),
        diagnosers=diagnoser_summaries(diagnoses, diagnosers, config), natural=natural,
        ledger=ledger, config=config.model_dump(mode="json"),
        provenance=provenance if provenance is not None else NoProvenance())
    disagreement = world_disagreement(dataset, {
        r["record"]["example_id"]: bool(metrics["correct"]) for r in typed_records
        if r["record"]["condition"] == "clean" and (metrics := r["metrics"]) is not None})
    if disagreement is not None:
        results = extended(results, EvaluateResults, disagreement=disagreement)
    caveats = honest_caveats(results, config.backend.name, constant_guesses(diagnoses))
    return run_dir.write_model(extended(results, EvaluateSummary, caveats=caveats))


def _concurrency(parallel: Parallelism | int) -> int:
    """Requests in flight the policy asks for (the natural part runs its diagnoses in
    threads on any executor: they wait on the model, and are few)."""
    return parallel.concurrency if isinstance(parallel, Parallelism) else parallel


def clean_traces(typed: list[TraceRow], rows: Sequence[JsonRow]) -> list[tuple[str, Trace]]:
    """(record id, trace) of every clean run among a propagation study's trace rows, `typed`
    as the summaries read them (which keep only some of a trace's fields) and as read."""
    return [(row["record"]["record_id"], Trace.model_validate(raw["trace"]))
            for row, raw in zip(typed, rows, strict=True) if row["record"]["condition"] == "clean"]

"""`cuer-agent evaluate`: the single-shot CUE-R baseline, the agentic fault-propagation
study, and the diagnoser comparison, into one run directory.

Layout: `config.json`, `single_shot/` (a CUE-R run directory), `agentic/` (a propagation
run directory, plus `diagnoses.jsonl`: one row per diagnoser per injected run that still
failed), `summary.json`, `report.md`, `report.html`. Every part resumes where it stopped.

Diagnosers run while the failed fork is still in memory, so probing diagnosers re-execute
the very run they diagnose. A diagnoser that raises on one trace is recorded as an error
for that trace and counted; the run goes on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cuer_agent.config import StudyConfig
from cuer_agent.data import Dataset, Example
from cuer_agent.data._select import hop_questions
from cuer_agent.diagnosers import Diagnoser, get_diagnoser
from cuer_agent.diagnosers._probe import ExecutionProbe
from cuer_agent.execution import AgentConfig, Executor, RunResult
from cuer_agent.experiments.comparison import compare_analyses
from cuer_agent.experiments.cuer import run_cuer
from cuer_agent.experiments.cuer_report import write_cuer_summary
from cuer_agent.experiments.propagation import DIAGNOSES, RECORDS, TRACES, run_propagation
from cuer_agent.experiments.propagation_summary import summarize_propagation
from cuer_agent.experiments.run_agent import ledger_from_rows, retriever_factory
from cuer_agent.llm.backends import SkillClient
from cuer_agent.metrics import recall_correct
from cuer_agent.metrics.attribution import (
    Attribution,
    attribution_summary,
    chance_expected_accuracy,
)
from cuer_agent.parallel import Parallelism
from cuer_agent.runs import RunDir
from cuer_agent.testing import make_view


def build_diagnosers(config: StudyConfig, skills: SkillClient) -> list[Diagnoser]:
    """Every configured diagnoser (unknown names fail here, before any work)."""
    out = []
    for name in config.diagnose.names:
        options: dict[str, Any] = {"budget": config.diagnose.probe_budget}
        if name == "llm-judge":
            options["skills"] = skills
        out.append(get_diagnoser(name, **options))
    return out


class DiagnoseFailed:
    """The `on_failed` hook: run every diagnoser on one failed injected run. Picklable
    (diagnosers, executor, config), so it runs in the worker that holds the fork."""

    def __init__(self, diagnosers: list[Diagnoser], executor: Executor,
                 config: StudyConfig) -> None:
        self.diagnosers = diagnosers
        self.executor = executor
        self.config = config

    def __call__(self, example: Example, spec: Any, hop: int,
                 fork: RunResult) -> list[dict[str, Any]]:
        def oracle(answer: str) -> bool:  # the probe's correctness oracle (sees gold)
            return bool(recall_correct(answer, example.gold_answers,
                                       threshold=self.config.propagation.recall_threshold))

        rows = []
        for d in self.diagnosers:
            base = {"record_id": f"{example.id}/{spec.name}@{hop}", "example_id": example.id,
                    "fault": spec.name, "true_hop": hop, "true_stage": spec.stage,
                    "n_hops": len(fork.trace.hops), "diagnoser": d.name}
            probe = (ExecutionProbe(self.executor, fork, oracle,
                                    budget=2 * self.config.diagnose.probe_budget + 2)
                     if d.probing else None)
            keys: list[str] = []
            try:
                with self.executor.skills.collect() as keys:
                    view = make_view(d, fork.trace, example.answer, self.config.diagnose.seed)
                    diagnosis = d.diagnose(view, probe)
            except Exception as exc:  # one trace's failure must not stop the study
                # The requests it made before failing were spent all the same.
                rows.append({**base, "pred_hop": None, "pred_stage": None,
                             "calls": len(keys), "tokens": 0,
                             "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            calls = len(keys)
            tokens = diagnosis.cost.tokens + (probe.tokens if probe else 0)
            rows.append({**base, "pred_hop": diagnosis.hop, "pred_stage": diagnosis.stage,
                         "propagated": diagnosis.propagated, "cause": diagnosis.cause,
                         "calls": calls, "tokens": tokens, "error": ""})
        return rows


def diagnoser_summaries(rows: list[dict[str, Any]], diagnosers: list[Diagnoser],
                        config: StudyConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in diagnosers:
        items = [Attribution(example_id=r["example_id"], fault=r["fault"],
                             true_hop=r["true_hop"], true_stage=r["true_stage"],
                             n_hops=r["n_hops"], pred_hop=r["pred_hop"],
                             pred_stage=r["pred_stage"], calls=r["calls"], tokens=r["tokens"])
                 for r in rows if r["diagnoser"] == d.name]
        summary = attribution_summary(items, n_resamples=config.diagnose.bootstrap_resamples,
                                      seed=42, min_cell=config.diagnose.min_cell)
        summary.update({"uses_gold": d.uses_gold, "probing": d.probing,
                        "stand_in": d.stand_in})
        if d.name == "chance":
            # The chance diagnoser draws from 1..max(1, n): a 0-hop trace (early
            # termination at hop 1) gets hop 1. The analytic value uses the same support.
            expected = chance_expected_accuracy(
                [dataclasses.replace(it, n_hops=max(1, it.n_hops)) for it in items])
            summary["expected_acc_analytic"] = {
                **{h: v["expected_acc"] for h, v in expected["by_depth"].items()},
                "overall": expected["expected_acc"]}
        out[d.name] = summary
    return out


def constant_guesses(rows: list[dict[str, Any]], share: float = 0.95) -> dict[str, int]:
    """Diagnosers that name one hop for at least `share` of the traces: name → that hop."""
    by: dict[str, list[int]] = {}
    for r in rows:
        if r["pred_hop"] is not None:
            by.setdefault(r["diagnoser"], []).append(r["pred_hop"])
    out = {}
    for name, hops in by.items():
        top = max(set(hops), key=lambda h: (hops.count(h), -h))
        if hops.count(top) >= share * len(hops):
            out[name] = top
    return out


def honest_notes(summary: dict[str, Any], backend: str,
                 constant: dict[str, int] | None = None) -> list[str]:
    """Caveats a reader needs before quoting a number, derived from the results."""
    notes = []
    for name, hop in sorted((constant or {}).items()):
        if hop == 0:
            notes.append(f"{name} names the answer level (hop 0) for (almost) every trace: "
                         "it localises no hop at all.")
            continue
        notes.append(f"{name} names hop {hop} for (almost) every trace, so its accuracy at "
                     f"depth {hop} (up to 1.0) is a constant guess, not localisation.")
    if backend == "extractive":
        notes.append("The backend is the extractive reader: a deterministic rule-based "
                     "stand-in, not a language model. Its failures are systematic, so a "
                     "probe that re-executes the same agent sees exactly the same behaviour "
                     "— counterfactual diagnosers can look far better than they would "
                     "against a sampling LLM.")
    for name, d in summary.get("diagnosers", {}).items():
        acc = (d.get("exact_hop_acc") or {}).get("mean")
        perfect = [h for h, cell in (d.get("by_depth") or {}).items() if cell.get("acc") == 1.0]
        if d.get("probing") and name not in (constant or {}) and perfect:
            where = ("overall" if acc is not None and acc >= 0.999
                     else f"at depth {', '.join(perfect)}")
            notes.append(f"{name} scores 1.00 {where}: on a deterministic agent, repairing the "
                         "injected hop restores the clean run, while an earlier repair "
                         "regenerates the same faulty suffix under the fault — the probe is "
                         "exact by design here, which says nothing of how it would fare "
                         "against a sampling model.")
        if d.get("stand_in"):
            notes.append(f"{name} is a {d['stand_in']}.")
        if d.get("uses_gold"):
            notes.append(f"{name} reads the gold answer (declared); it is not a deployable "
                         "gold-free diagnoser.")
    original = (summary.get("single_shot", {}).get("conditions", {}).get("original", {})
                .get("correctness", {}).get("mean"))
    if original is not None and original < 0.05:
        notes.append(f"The single-shot baseline answers {original:.0%} correctly: one BM25 "
                     "retrieval with the whole question rarely reaches the later hops' "
                     "passages (the synthetic world is built that way), so its CUE-R deltas on "
                     "correctness are zero by floor effect; grounding and D still move.")
    errors = summary.get("ledger", {}).get("errors")
    if errors:
        notes.append(f"{errors} trace(s) stopped early because a request to the model server "
                     "still failed after every retry (their `error` field in traces.jsonl says "
                     "why); they are scored as wrong answers, so an injected run among them "
                     "counts as not recovered.")
    notes += recovery_notes(summary.get("agentic", {}), backend)
    faults = summary.get("agentic", {}).get("faults", {})
    for fault, per_hop in faults.items():
        small = [h for h, cell in per_hop.items() if cell.get("failed", 0) < 10]
        if small:
            notes.append(f"{fault}: fewer than 10 failed traces at hop(s) {', '.join(small)} "
                         "— those cells are descriptive only.")
    return notes


RECOVERY_EXPLAINED: dict[tuple[str, int], str] = {
    ("early_termination", 0): "a forced stop leaves nothing to retry: `answer` answers from the "
                              "hops taken, and for a chain question no earlier hop's finding is "
                              "the answer",
    ("query_drift", 1): "VERIFY's relevance check finds the drifted hop's evidence is about an "
                        "entity the question never names, and the planner's retry re-derives the "
                        "sub-query from its own history; the drift corrupted the first attempt "
                        "only",
    ("false_premise", 1): "the extractive reader takes no fact from a negated sentence, so the "
                          "passage cannot mislead it; VERIFY only marks the hop contested and "
                          "the retry (or the contested finding itself) carries on",
    ("empty_retrieval", 1): "VERIFY always notices an empty hop, and any reformulated sub-query "
                            "escapes a fault keyed to the faulted one",
    ("irrelevant_evidence", 1): "VERIFY's relevance check notices evidence about other entities, "
                                "and any reformulated sub-query escapes the fault",
    ("stale_evidence", 1): "VERIFY finds two passages about one entity disagreeing, and the "
                           "retry's clean retrieval has only the current one",
    ("content_tampering", 0): "the corrupted span is consistent across the hop's evidence, so "
                              "VERIFY has nothing to notice and the agent follows it",
}
"""Which part of the extractive agent makes a fault's recovery 0 or 1 at every depth."""


EXTREME = 0.05
"""A recovery within this of 0 or 1 at every depth is explained, not just reported."""


def recovery_notes(agentic: dict[str, Any], backend: str) -> list[str]:
    """Explain every fault whose recovery is (within `EXTREME` of) 0 or 1 at every depth,
    and count ineffective injections where they exceed a fifth of a fault's injections."""
    notes = []
    persistence = agentic.get("persistence")
    if persistence == "hop":
        notes.append("Fault persistence is `hop`: every retrieval at the faulted hop meets "
                     "the fault, so recovery is impossible by design and its figures measure "
                     "nothing but that.")
    elif persistence == "once":
        notes.append("Fault persistence is `once`: a fault is a one-shot state edit, so a "
                     "retry of the same query meets a clean retriever and a regenerating probe "
                     "restores the clean run — both by construction.")
    for fault, per_hop in (agentic.get("faults") or {}).items():
        rates = [cell["recovery"] for cell in per_hop.values()
                 if cell.get("injected") and cell.get("recovery") is not None]
        for end in (0, 1):
            if rates and all(abs(rate - end) <= EXTREME for rate in rates):
                low, high = min(rates), max(rates)
                span = f"{low:.0%}" if low == high else f"{low:.0%}–{high:.0%}"
                why = (RECOVERY_EXPLAINED.get((fault, end))
                       if backend == "extractive" and persistence == "query" else None)
                notes.append(f"{fault} recovers {span} at every depth"
                             + (f": {why}." if why else
                                " (a property of this agent under this persistence, not a "
                                "measured tendency)."))
        injected = sum(cell.get("injected", 0) for cell in per_hop.values())
        ineffective = sum(cell.get("ineffective", 0) for cell in per_hop.values())
        if injected and ineffective > 0.2 * injected:
            notes.append(f"{fault}: {ineffective} of {injected} injections were ineffective "
                         "(hop h selected, found and verified what it did in the clean run: "
                         "the injected item ranked where the reader never read it, or it "
                         "concerned a fact the hop did not use); recovery over the effective "
                         "ones is reported beside the overall figure.")
    return notes


def run_evaluate(dataset: Dataset, skills: SkillClient, run_dir: RunDir, config: StudyConfig,
                 *, show_progress: bool = True,
                 parallel: Parallelism | int = 1) -> dict[str, Any]:
    diagnosers = build_diagnosers(config, skills)
    retriever_for = retriever_factory(dataset)
    meta = {"backend": config.backend.name, "model": skills.backend.model}

    single_dir = RunDir(run_dir.path / "single_shot")
    single_dir.open({"command": "cuer", "data": config.data.model_dump(mode="json"),
                     "backend": config.backend.model_dump(mode="json"),
                     "source": dataset.source, "cuer": config.cuer.model_dump(mode="json")})
    single = Executor(skills, AgentConfig(mode="single_shot", k=config.cuer.k), meta=meta)
    per_hop = config.cuer.asks_per_hop(dataset.name)
    single_data = hop_questions(dataset) if per_hop else dataset
    run_cuer(single_data, single, single_dir, config.cuer, retriever_for=retriever_for,
             show_progress=show_progress, parallel=parallel)
    single_summary = {**write_cuer_summary(single_dir, config.cuer),
                      "questions": "per_hop" if per_hop else "whole"}

    agentic_dir = RunDir(run_dir.path / "agentic")
    agentic_dir.open({"command": "propagate", "source": dataset.source,
                      "hop_budget": config.agent.hops,
                      "retries_per_hop": config.agent.retries_per_hop,
                      "data": config.data.model_dump(mode="json"),
                      "backend": config.backend.model_dump(mode="json"),
                      "propagation": config.propagation.model_dump(mode="json")})
    agent = Executor(skills, AgentConfig(hop_budget=config.agent.hops, k=config.agent.k,
                                         retries_per_hop=config.agent.retries_per_hop),
                     meta=meta)
    run_propagation(dataset, agent, agentic_dir, config.propagation,
                    retriever_for=retriever_for, show_progress=show_progress,
                    on_failed=DiagnoseFailed(diagnosers, agent, config),
                    parallel=parallel)
    traces = agentic_dir.rows(TRACES)
    agentic = summarize_propagation(agentic_dir.rows(RECORDS), traces, config.propagation)

    diagnoses = agentic_dir.rows(DIAGNOSES)
    ledger = ledger_from_rows(single_dir.rows("traces.jsonl") + traces)
    ledger["diagnoser_requests"] = sum(r["calls"] for r in diagnoses)
    ledger["diagnoser_errors"] = sum(1 for r in diagnoses if r["error"])
    summary: dict[str, Any] = {
        "single_shot": single_summary,
        "agentic": agentic,
        "comparison": compare_analyses(single_dir.rows("records.jsonl"),
                                       agentic_dir.rows(RECORDS)),
        "diagnosers": diagnoser_summaries(diagnoses, diagnosers, config),
        "ledger": ledger,
        "config": config.model_dump(mode="json"),
    }
    summary["notes"] = honest_notes(summary, config.backend.name, constant_guesses(diagnoses))
    run_dir.write_summary(summary)
    return summary

"""The natural-failure part of a study: label the clean runs from the data set's gold
chain, write them as a benchmark any tool can score itself on, and score the diagnosers.

Writes into its directory (`natural/` of a run):

* `labels.jsonl` — one `TraceLabel` per scored clean run (correct, or failed with the
  first-error hop and stage, `fault` = natural/<kind>, `rule` = the rule's name and
  version, `why` = one line of the walk);
* `unlabelled.jsonl` — failures the rule could not place, and runs not scored, with why;
* `spans.jsonl` — every clean run as OpenInference spans (`cuer_agent.interchange`), ids
  as in `labels.jsonl`: `cuer-agent diagnose --traces natural/spans.jsonl --labels
  natural/labels.jsonl` scores any diagnoser on the same failures;
* `diagnoses.jsonl` — one row per diagnoser × labelled run (failures scored against the
  label, correct runs for clean blame);
* `summary.json` — `NaturalSummary`.

Diagnosers that re-execute the agent (probes) are not run: they repair a hop under an
injected fault, and a natural failure has none (`not_run` says so). Every file is
written whole from the runs (a killed part is done again, to the same bytes).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NotRequired, TypedDict

from cuer_agent.config import StudyConfig
from cuer_agent.data import Dataset
from cuer_agent.diagnosers import Diagnoser, make_view
from cuer_agent.interchange.export import trace_request
from cuer_agent.interventions.facts import fact_source
from cuer_agent.llm.backends import SkillClient
from cuer_agent.parallel import ordered_map
from cuer_agent.run_dir import RunDir, canonical_json, write_atomic
from cuer_agent.studies.diagnose.labels import LABELLED
from cuer_agent.studies.diagnose.runner import (
    CLEAN,
    DiagnosisFields,
    DiagnosisRow,
    diagnosis_fields,
)
from cuer_agent.studies.natural.labels import Labelled, label_runs, runs_of
from cuer_agent.studies.natural.probes import NaturalProbing
from cuer_agent.studies.natural.summary import NaturalSummary, natural_summary
from cuer_agent.trace import Trace

NATURAL = "natural"
"""The part's directory in a run directory."""
PROBES_NOT_RUN = ("re-executes the agent to undo an injected fault; a natural failure has "
                  "no fault to undo, and this probe makes none of the agent's repairs")
PROBES_NEED_AGENT = ("re-executes the agent: this part was given traces without the agent "
                     "that ran them")


def _lines(rows: list[dict[str, object]]) -> str:
    return "".join(canonical_json(row) + "\n" for row in rows)


def write_labels(labelled: list[Labelled], out: Path) -> None:
    """`labels.jsonl` and `unlabelled.jsonl` of the labelled runs, in `out`."""
    write_atomic(out / "labels.jsonl", _lines([
        lab.label.model_dump(mode="json", exclude_none=True)
        for lab in labelled if lab.label is not None]))
    write_atomic(out / "unlabelled.jsonl", _lines([
        {"trace_id": lab.run.trace_id, "example_id": lab.run.trace.example_id,
         "reason": lab.reason} for lab in labelled if lab.label is None]))


def write_benchmark(labelled: list[Labelled], out: Path) -> None:
    """`write_labels`, and `spans.jsonl` of the labelled runs."""
    out.mkdir(parents=True, exist_ok=True)
    write_labels(labelled, out)
    write_atomic(out / "spans.jsonl", _lines([
        trace_request(lab.run.trace, lab.run.trace_id, study=NATURAL) for lab in labelled]))


def diagnose_labelled(labelled: list[Labelled], diagnosers: list[Diagnoser],
                      config: StudyConfig, skills: SkillClient, hop_budget: int | None,
                      concurrency: int = 1,
                      probing: NaturalProbing | None = None) -> list[DiagnosisRow]:
    """Every diagnoser on every labelled run, as the study's diagnosis rows, in the order
    runs × diagnosers; a probe (`probing`) on the failures only — a correct run has
    nothing to repair. Up to `concurrency` diagnoses run at once in threads (a judge's
    requests wait on a model server; the rows are the same at any value)."""
    pairs = [(lab, truth, d) for lab in labelled if (truth := _truth(lab)) is not None
             for d in diagnosers if not d.probing or truth["fault"] != CLEAN]

    def diagnose(pair: tuple[Labelled, _Truth, Diagnoser]) -> DiagnosisRow:
        lab, truth, d = pair
        run = lab.run
        return {"record_id": run.record_id, "example_id": run.trace.example_id, **truth,
                "n_hops": len(run.trace.hops), "diagnoser": d.name, **fields(lab, d)}

    def fields(lab: Labelled, d: Diagnoser) -> DiagnosisFields:
        run, example = lab.run, lab.run.example
        assert example is not None and lab.label is not None  # `_truth` keeps only these
        probe = None
        if d.probing:
            assert probing is not None  # `runnable` keeps probes only with the agent
            made = probing.probe(example, run.trace, lab.label)
            if isinstance(made, str):
                return {"pred_hop": None, "pred_stage": None, "calls": 0, "tokens": 0,
                        "error": made}
            probe = made
        view = make_view(d, run.trace, example.answer, config.diagnose.seed,
                         hop_budget=hop_budget)
        return diagnosis_fields(d, view, probe, skills)

    return list(ordered_map(diagnose, pairs, concurrency))


def runnable(diagnosers: list[Diagnoser], probing: NaturalProbing | None
             ) -> tuple[list[Diagnoser], dict[str, str]]:
    """The diagnosers that run on natural failures, and the rest → why not."""
    def why_not(d: Diagnoser) -> str | None:
        if not d.probing:
            return None
        if not getattr(d, "repairs_natural_failures", False):
            return PROBES_NOT_RUN
        return None if probing is not None else PROBES_NEED_AGENT

    reasons = {d.name: why for d in diagnosers if (why := why_not(d)) is not None}
    return [d for d in diagnosers if d.name not in reasons], reasons


class _Truth(TypedDict):
    fault: str
    true_hop: int
    true_stage: str
    wrong_hops: NotRequired[list[int]]


def _truth(lab: Labelled) -> _Truth | None:
    """What a labelled run is scored against (a correct run: clean; a failure: its first
    error and wrong hops), or None when it has no label or no example."""
    label = lab.label
    if label is None or lab.run.example is None:
        return None
    if label.outcome != "failed":
        return {"fault": CLEAN, "true_hop": 0, "true_stage": CLEAN}
    truth: _Truth = {"fault": label.fault or LABELLED, "true_hop": label.hop or 0,
                     "true_stage": label.stage or "answer"}
    if (wrong := label.wrong_hops()) is not None:
        truth["wrong_hops"] = wrong
    return truth


def run_natural(traces: Iterable[tuple[str, Trace]], dataset: Dataset,
                diagnosers: list[Diagnoser], out: Path, config: StudyConfig,
                skills: SkillClient, *, hop_budget: int | None,
                concurrency: int = 1, probing: NaturalProbing | None = None) -> NaturalSummary:
    """Label the clean runs of `dataset` given as (record id, trace), write the benchmark,
    diagnose (`concurrency` at once; the probes when `probing` gives the agent), write
    and return the summary."""
    runs = runs_of(traces, dataset.examples, key=dataset.name)
    labelled = label_runs(runs, fact_source(dataset), config.propagation.recall_threshold)
    write_benchmark(labelled, out)
    usable, not_run = runnable(diagnosers, probing)
    rows = diagnose_labelled(labelled, usable, config, skills, hop_budget, concurrency,
                             probing)
    write_atomic(out / "diagnoses.jsonl", _lines([dict(r) for r in rows]))
    return RunDir(out).write_model(natural_summary(dataset.name, labelled, rows, usable,
                                                   not_run, config))

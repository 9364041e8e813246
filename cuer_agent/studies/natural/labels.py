"""Label a set of clean runs: each correct, a natural failure placed by the rule
(`rule.first_error`, with every hop's verdict, `rule.hop_verdicts`), or a failure left
unlabelled with its reason.

A run is scored only when it ended normally: a run that ended in a request error or a
parse failure is no failure of the agent's reasoning (counted apart, as everywhere).
Correctness is the propagation study's (`recall_correct` at the study's threshold).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cuer_agent.data import Dataset, Example
from cuer_agent.interventions.facts import FactSource, fact_source
from cuer_agent.metrics import recall_correct
from cuer_agent.studies.diagnose.labels import HopVerdictLabel, TraceLabel
from cuer_agent.studies.diagnose.traces import gold_lookup
from cuer_agent.studies.natural.chain import gold_chain
from cuer_agent.studies.natural.rule import RULE, Unplaced, first_error, hop_verdicts
from cuer_agent.trace import Trace

NO_EXAMPLE = "no example of the data set matches the trace"
NOT_SCORED = "the run ended in a request error or a parse failure"


@dataclass(frozen=True)
class CleanRun:
    """One clean run to label: its ids, its trace, its example."""

    trace_id: str
    """Its id in `natural/spans.jsonl` and `natural/labels.jsonl`."""
    record_id: str
    """Its record id in the study that ran it."""
    trace: Trace
    example: Example | None


@dataclass(frozen=True)
class Labelled:
    """A clean run with its label (None: not scored or not placed, see `reason`)."""

    run: CleanRun
    label: TraceLabel | None
    reason: str = ""
    """Why there is no label: `NOT_SCORED`, `NO_EXAMPLE` or the rule's reason."""

    @property
    def failed(self) -> bool:
        """A natural failure (labelled or not): not a run that was not scored, nor one whose
        answer could not be judged for want of its example."""
        if self.label is not None:
            return self.label.outcome == "failed"
        return self.reason not in (NOT_SCORED, NO_EXAMPLE)


def label_run(run: CleanRun, facts: FactSource, threshold: float) -> Labelled:
    """The label of one clean run (see the module docstring)."""
    if run.trace.status != "ok":
        return Labelled(run, None, NOT_SCORED)
    if run.example is None:
        return Labelled(run, None, NO_EXAMPLE)
    if recall_correct(run.trace.answer, run.example.gold_answers, threshold=threshold):
        return Labelled(run, TraceLabel(trace_id=run.trace_id, outcome="correct", rule=RULE))
    chain = gold_chain(run.example, facts)
    if isinstance(chain, str):
        return Labelled(run, None, chain)
    verdicts = hop_verdicts(run.trace, chain)
    placed = first_error(run.trace, chain, verdicts)
    if isinstance(placed, Unplaced):
        return Labelled(run, None, placed.reason)
    return Labelled(run, TraceLabel(
        trace_id=run.trace_id, outcome="failed", hop=placed.hop, stage=placed.stage,
        fault=f"natural/{placed.kind}", rule=RULE, why=placed.why,
        hop_verdicts=[HopVerdictLabel(hop=v.hop, right=v.right, step=v.step, stage=v.stage)
                      for v in verdicts]))


def label_runs(runs: Iterable[CleanRun], facts: FactSource, threshold: float
               ) -> list[Labelled]:
    """`label_run` over `runs`, in order."""
    return [label_run(run, facts, threshold) for run in runs]


def runs_of(traces: Iterable[tuple[str, Trace]], examples: Iterable[Example], *,
            key: str) -> list[CleanRun]:
    """(record id, trace) pairs as clean runs, with their examples (by example id) and a
    trace id that hashes (`key`, record id): 32 hex digits, an OpenTelemetry trace id."""
    by_id: Mapping[str, Example] = {ex.id: ex for ex in examples}
    return [CleanRun(hashlib.sha256(f"{key}\n{rid}".encode()).hexdigest()[:32], rid, trace,
                     by_id.get(trace.example_id)) for rid, trace in traces]


def labels_from_gold(traces: Iterable[tuple[str, Trace]], dataset: Dataset,
                     threshold: float) -> tuple[dict[str, TraceLabel], list[Labelled]]:
    """Labels of any agent's traces from the data set's gold (`diagnose --traces --gold`):
    (trace id, trace) pairs matched to examples by example id, then by question; trace id
    → label for every run the rule labelled, and every run with its outcome."""
    find = gold_lookup(dataset.examples)
    runs = [CleanRun(tid, tid, trace, find(trace)) for tid, trace in traces]
    labelled = label_runs(runs, fact_source(dataset), threshold)
    return {lab.run.trace_id: lab.label for lab in labelled if lab.label is not None}, labelled

"""Running the diagnosers inside a study: on every injected run that still fails, and on
every clean, correct, unfaulted run (where a diagnoser should name no hop).

`DiagnoseFailed` is the propagation study's `on_failed` hook. It runs while the run is
still in memory, so probing diagnosers re-execute the very run they diagnose, under the
fault it ran with. A diagnoser that raises on one trace is recorded as an error for that
trace and counted; the study goes on.

A diagnosis row is a `DiagnosisRow` (fault and true_stage "none", true_hop 0 for a clean
run).
"""

from __future__ import annotations

from typing import Any, NotRequired

from pydantic import TypeAdapter
from typing_extensions import TypedDict  # typing's has no pydantic schema on 3.11

from cuer_agent.config import StudyConfig
from cuer_agent.data import Example
from cuer_agent.diagnosers import Diagnoser, DiagnosisView, get_diagnoser, make_view
from cuer_agent.diagnosers._reexecution import ExecutionProbe
from cuer_agent.execution import Executor, RunResult
from cuer_agent.llm.backends import RequestLog, SkillClient
from cuer_agent.metrics import recall_correct
from cuer_agent.run_dir import RunDir, checked_rows

CLEAN = "none"
"""The `fault` of a diagnosis made on a clean, correct, unfaulted run."""


class DiagnosisFields(TypedDict):
    """One diagnosis as row fields. An error row (the diagnoser raised, or could not run)
    has `pred_hop` and `pred_stage` None, no `propagated` or `cause`, and the reason in
    `error` ("" otherwise)."""

    pred_hop: int | None
    pred_stage: str | None
    propagated: NotRequired[bool]
    cause: NotRequired[str]
    calls: int
    """Skill requests the diagnosis made (an error row: those made before it failed)."""
    tokens: int
    error: str
    by_skill: NotRequired[dict[str, dict[str, int]]]
    """The diagnosis's skill requests per skill (`RequestLog.spent_by_skill`)."""
    repair: NotRequired[str]
    """A probe on a natural failure: the repair that fixed hop `pred_hop`."""


class DiagnosisRow(DiagnosisFields):
    """A row of `diagnoses.jsonl`: one diagnoser on one run (see the module docstring)."""

    record_id: str
    example_id: str
    fault: str
    """The injected fault, or `CLEAN`."""
    true_hop: int
    """The faulted hop (0 for a clean run)."""
    true_stage: str
    n_hops: int
    diagnoser: str
    wrong_hops: NotRequired[list[int]]
    """A failure whose label gives every hop's verdict: the hops it calls wrong, with the
    first error (`TraceLabel.wrong_hops`)."""


_DIAGNOSIS_ROWS = TypeAdapter(list[DiagnosisRow])


def diagnosis_rows(run_dir: RunDir, name: str) -> list[DiagnosisRow]:
    """The diagnosis rows of a run directory's JSONL file `name`, checked as
    `DiagnosisRow`s (`cuer_agent.run_dir.checked_rows`: a row of another shape is a
    `DataError`)."""
    return checked_rows(run_dir.rows(name), _DIAGNOSIS_ROWS, run_dir.path / name)


def build_diagnosers(config: StudyConfig, skills: SkillClient) -> list[Diagnoser]:
    """Every configured diagnoser (unknown names fail here, before any work)."""
    # Every diagnoser gets the same options; each reads the ones it knows (the judges call
    # the backend's skills, the probes take a budget).
    return [get_diagnoser(name, budget=config.diagnose.probe_budget, skills=skills)
            for name in config.diagnose.names]


class DiagnoseFailed:
    """The `on_failed` hook: run every diagnoser on one run. Picklable (diagnosers,
    executor, config), so it runs in the worker that holds the run."""

    def __init__(self, diagnosers: list[Diagnoser], executor: Executor,
                 config: StudyConfig) -> None:
        self.diagnosers = diagnosers
        self.executor = executor
        self.config = config

    def __call__(self, example: Example, spec: Any, hop: int,
                 run: RunResult) -> list[DiagnosisRow]:
        def oracle(answer: str) -> bool:  # the probe's correctness oracle (reads gold)
            return bool(recall_correct(answer, example.gold_answers,
                                       threshold=self.config.propagation.recall_threshold))

        fault = CLEAN if spec is None else spec.name
        record_id = f"{example.id}/clean" if spec is None else f"{example.id}/{fault}@{hop}"
        rows: list[DiagnosisRow] = []
        for d in self.diagnosers:
            probe = (ExecutionProbe(self.executor, run, oracle,
                                    budget=2 * self.config.diagnose.probe_budget + 2)
                     if d.probing else None)
            view = make_view(d, run.trace, example.answer, self.config.diagnose.seed,
                             hop_budget=self.executor.config.hop_budget)
            # An injected fault's row has no `wrong_hops`; mypy asks for every optional
            # key of a literal with a ** item to be in one, hence the ignore.
            rows.append({
                "record_id": record_id, "example_id": example.id, "fault": fault,
                "true_hop": hop, "true_stage": CLEAN if spec is None else spec.stage,
                "n_hops": len(run.trace.hops), "diagnoser": d.name,
                **diagnosis_fields(d, view, probe, self.executor.skills)})  # type: ignore[typeddict-item]
        return rows


def diagnosis_fields(d: Diagnoser, view: DiagnosisView, probe: ExecutionProbe | None,
                     skills: SkillClient) -> DiagnosisFields:
    """One diagnosis as row fields: {pred_hop, pred_stage, propagated, cause, calls,
    tokens, error}. A diagnoser that raises gives an error row (pred_hop None) with the
    requests it made before failing, which were spent all the same."""
    keys = RequestLog()
    try:
        with skills.collect() as keys:
            diagnosis = d.diagnose(view, probe)
    except Exception as exc:  # one trace's failure must not stop the study
        return {"pred_hop": None, "pred_stage": None, "calls": len(keys), "tokens": 0,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "by_skill": keys.spent_by_skill()}
    tokens = diagnosis.cost.tokens + (probe.tokens if probe else 0)
    fields: DiagnosisFields = {
        "pred_hop": diagnosis.hop, "pred_stage": diagnosis.stage,
        "propagated": diagnosis.propagated, "cause": diagnosis.cause, "calls": len(keys),
        "tokens": tokens, "error": "", "by_skill": keys.spent_by_skill()}
    if diagnosis.repair is not None:
        fields["repair"] = diagnosis.repair
    return fields

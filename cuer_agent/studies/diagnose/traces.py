"""`cuer-agent diagnose --traces`: run diagnosers on traces from any agent.

Inputs: OpenInference spans (OTLP/JSON, `cuer_agent.interchange`) or our own traces
JSONL (`--format cuer`: Trace lines, or a run directory's rows). No agent runs here, so:

* trace-only diagnosers (view = the observable trace) always run;
* diagnosers that read the gold answer (`uses_gold`) run when gold is given
  (`--gold FILE --dataset NAME`; a trace is matched to an example by id, then by question;
  a trace no example matches gets an error row for them, naming why);
* probing diagnosers re-execute the agent: they are refused before any work.

Labels (for scoring only, never in a view): a labels file (`--labels`,
`cuer_agent.studies.diagnose.labels`: per trace its outcome and, when it failed, the
first-error hop and stage) or, for a trace exported by cuer-agent, its intervention
record and metrics (a fault record, which names a stage, gives `fault`, `true_hop`,
`true_stage`; a clean record gives fault "none"). A labels file wins where both exist.
Scored like the study: a failed trace is scored against its hop, a correct clean one
counts for the clean-blame rate — the outcome a label gives, else the run's recorded
`correct` metric, else (with gold) the answer against the gold answer.

Outputs in `--out`: `traces.jsonl` (the imported traces, one Trace per line),
`unmapped.jsonl` (spans and traces left out, with the reason), `diagnoses.jsonl` (one row
per trace × diagnoser, appended as it goes: a stopped run keeps its rows), `summary.json`
and `report.md`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from pydantic import ValidationError

from cuer_agent.config import StudyConfig
from cuer_agent.data import Example
from cuer_agent.diagnosers import Diagnoser, diagnoser_names, get_diagnoser, make_view
from cuer_agent.errors import CuerError, DataError
from cuer_agent.interchange import ImportedTrace, Unmapped, import_spans, read_spans
from cuer_agent.interchange.export import record_metrics
from cuer_agent.metrics import recall_correct
from cuer_agent.metrics.attribution import chance_expected_accuracy
from cuer_agent.run_dir import RunDir, canonical_json, scan_rows, write_atomic
from cuer_agent.studies.diagnose.labels import LABELLED, TraceLabel
from cuer_agent.studies.diagnose.runner import (
    CLEAN,
    DiagnosisFields,
    DiagnosisRow,
    diagnosis_fields,
)
from cuer_agent.studies.diagnose.summary import attribution, diagnoser_summaries
from cuer_agent.studies.diagnose.summary_model import (
    ChanceExpected,
    DiagnoserTraces,
    Histograms,
    LabelCounts,
    SpansLeftOut,
    TracesSummary,
)
from cuer_agent.trace import Trace, write_traces

if TYPE_CHECKING:
    from cuer_agent.diagnosers._reexecution import ExecutionProbe


class Probing(Protocol):
    """What runs the probes on a trace's failure: its agent re-executed on its example
    (`cuer_agent.studies.natural.probes.NaturalProbing`)."""

    def probe(self, example: Example, trace: Trace,
              label: TraceLabel) -> ExecutionProbe | str: ...

FORMATS = ("openinference", "cuer")


class Label(TypedDict):
    """What a trace is scored against: all None when it carries no label."""

    fault: str | None
    """The fault (`CLEAN` for a correct or clean run, `LABELLED` for a labels file's
    failure that names none)."""
    true_hop: int | None
    true_stage: str | None
    wrong_hops: NotRequired[list[int]]
    """A failure whose label gives every hop's verdict: the hops it calls wrong."""


class TraceDiagnosisRow(DiagnosisFields):
    """A row of `diagnoses.jsonl` of `diagnose --traces`: one diagnoser on one trace."""

    trace_id: str
    record_id: str
    example_id: str
    mode: str
    mapping: str
    fault: str | None
    true_hop: int | None
    true_stage: str | None
    correct: bool | None
    """The trace's outcome, when known (a label, the run's metric, or the gold answer)."""
    n_hops: int
    diagnoser: str
    wrong_hops: NotRequired[list[int]]
    """As in `Label`."""


def trace_only_diagnosers() -> list[str]:
    """Registered diagnosers whose view is the observable trace alone: no gold, no probe."""
    made = [get_diagnoser(name) for name in diagnoser_names()]
    return [d.name for d in made if not d.uses_gold and not d.probing]


def check_diagnosers(diagnosers: list[Diagnoser], *, has_gold: bool,
                     has_agent: bool = False) -> None:
    """Refuse, before any work, what cannot run on traces alone (`has_agent`: the
    traces' agent is given, so the probes that repair natural failures can run)."""
    for d in diagnosers:
        if d.probing and not (has_agent and getattr(d, "repairs_natural_failures", False)):
            raise CuerError(f"diagnoser {d.name!r} re-executes the agent (probing): it needs "
                            "the agent that ran the traces (--agent module:factory, with "
                            "--gold and --dataset)" if not has_agent else
                            f"diagnoser {d.name!r} only undoes injected faults: run it in "
                            "`cuer-agent evaluate` or `propagate`")
        if d.uses_gold and not has_gold:
            raise CuerError(f"diagnoser {d.name!r} reads the gold answer: pass --gold FILE "
                            "--dataset NAME")


def load_traces(path: Path, fmt: str, retrieval_tools: tuple[str, ...] = ()
                ) -> tuple[list[ImportedTrace], list[Unmapped]]:
    """The traces of a file, as `ImportedTrace`s, plus what could not be mapped
    (`retrieval_tools`: TOOL spans that are searches, for OpenInference input)."""
    if fmt not in FORMATS:
        raise CuerError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "openinference":
        return import_spans(read_spans(path), retrieval_tools)
    if path.is_dir():
        raise DataError(path, "a directory, not a traces file")
    if not path.is_file():
        raise DataError(path, "no such file")
    beside = path.parent / "records.jsonl"
    metrics = record_metrics(beside) if beside != path else {}
    out = []
    for i, row in enumerate(scan_rows(path), start=1):
        try:
            trace = Trace.model_validate(row.get("trace", row))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise DataError(path, f"not a trace ({where}: {first['msg']})", record=i) from None
        record = row.get("record") or {}
        rid = record.get("record_id", "")
        out.append(ImportedTrace(rid or trace.example_id, trace, "cuer", record,
                                 metrics.get(rid, {})))
    return out, []


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def gold_lookup(examples: list[Example]) -> Callable[[Trace], Example | None]:
    """Trace → its example: by example id, then by the question's text."""
    by_id = {ex.id: ex for ex in examples}
    by_question = {_norm(ex.question): ex for ex in examples}

    def find(trace: Trace) -> Example | None:
        return by_id.get(trace.example_id) or by_question.get(_norm(trace.question))
    return find


Labels = dict[str, TraceLabel]


def given_label(item: ImportedTrace, labels: Labels | None) -> TraceLabel | None:
    """The labels file's entry for this trace: by trace id, record id, then example id."""
    if not labels:
        return None
    keys = (item.trace_id, item.record.get("record_id", ""), item.trace.example_id)
    return next((labels[k] for k in keys if k and k in labels), None)


def label(item: ImportedTrace, labels: Labels | None = None) -> Label:
    """fault / true_hop / true_stage from the labels file, else from a cuer record (None
    when there is no label)."""
    if (given := given_label(item, labels)) is not None:
        if given.outcome == "correct":
            return {"fault": CLEAN, "true_hop": 0, "true_stage": CLEAN}
        failed: Label = {"fault": given.fault or LABELLED, "true_hop": given.hop,
                         "true_stage": given.stage}
        if (wrong := given.wrong_hops()) is not None:
            failed["wrong_hops"] = wrong
        return failed
    rec = item.record
    stage = (rec.get("params") or {}).get("stage")
    if stage and int(rec.get("hop", 0)) >= 1:
        return {"fault": rec.get("condition"), "true_hop": int(rec["hop"]),
                "true_stage": stage}
    if rec.get("condition") == "clean":
        return {"fault": CLEAN, "true_hop": 0, "true_stage": CLEAN}
    return {"fault": None, "true_hop": None, "true_stage": None}


def _correct(item: ImportedTrace, example: Example | None, config: StudyConfig,
             labels: Labels | None = None) -> bool | None:
    if (given := given_label(item, labels)) is not None:
        return given.outcome == "correct"
    if "correct" in item.metrics:
        return bool(item.metrics["correct"])
    if example is not None:
        return bool(recall_correct(item.trace.answer, example.gold_answers,
                                   threshold=config.propagation.recall_threshold))
    return None


def diagnose_one(item: ImportedTrace, diagnosers: list[Diagnoser], example: Example | None,
                 config: StudyConfig, skills: Any, hop_budget: int | None = None,
                 labels: Labels | None = None,
                 probing: Probing | None = None) -> list[TraceDiagnosisRow]:
    """Every diagnoser on one trace; a probe (`probing`) on a labelled failure only — a
    correct or unlabelled run has nothing to repair, and gets no probe row."""
    trace = item.trace
    correct = _correct(item, example, config, labels)
    given = given_label(item, labels)
    rows: list[TraceDiagnosisRow] = []
    for d in diagnosers:
        fields: DiagnosisFields
        probe = None
        if d.probing:
            if probing is None or given is None or given.outcome != "failed":
                continue
            made = (probing.probe(example, trace, given) if example is not None
                    else "no gold example matches this trace (by example id or question)")
            if isinstance(made, str):
                rows.append(_row(item, labels, correct, d, {
                    "pred_hop": None, "pred_stage": None, "calls": 0, "tokens": 0,
                    "error": made}))
                continue
            probe = made
        if d.uses_gold and example is None:
            fields = {"pred_hop": None, "pred_stage": None, "calls": 0, "tokens": 0,
                      "error": "no gold example matches this trace (by example id or "
                               "question)"}
        else:
            view = make_view(d, trace, example.answer if example else "",
                             config.diagnose.seed, hop_budget=hop_budget)
            fields = diagnosis_fields(d, view, probe, skills)
        rows.append(_row(item, labels, correct, d, fields))
    return rows


def _row(item: ImportedTrace, labels: Labels | None, correct: bool | None, d: Diagnoser,
         fields: DiagnosisFields) -> TraceDiagnosisRow:
    trace = item.trace
    return {"trace_id": item.trace_id, "record_id": item.record.get("record_id", ""),
            "example_id": trace.example_id, "mode": trace.mode, "mapping": item.mapping,
            **label(item, labels), "correct": correct, "n_hops": len(trace.hops),
            "diagnoser": d.name, **fields}


def scorable(rows: list[TraceDiagnosisRow]) -> list[TraceDiagnosisRow]:
    """Rows scored as the study scores them: faulted runs that failed, clean runs that
    were correct (a row whose correctness is unknown is not scored)."""
    return [r for r in rows if r["fault"] is not None and r["correct"] is not None
            and (r["correct"] if r["fault"] == CLEAN else not r["correct"])]


def scored_row(row: TraceDiagnosisRow) -> DiagnosisRow:
    """A scorable row (`scorable`) as the study's diagnosis row, which `diagnose.summary`
    scores."""
    fault, hop, stage = row["fault"], row["true_hop"], row["true_stage"]
    if fault is None or hop is None or stage is None:
        raise ValueError(f"trace {row['trace_id']} carries no label: it is not scored")
    out: DiagnosisRow = {"record_id": row["record_id"], "example_id": row["example_id"],
                         "fault": fault, "true_hop": hop, "true_stage": stage,
                         "n_hops": row["n_hops"], "diagnoser": row["diagnoser"],
                         "pred_hop": row["pred_hop"], "pred_stage": row["pred_stage"],
                         "calls": row["calls"], "tokens": row["tokens"], "error": row["error"]}
    if "wrong_hops" in row:
        out["wrong_hops"] = row["wrong_hops"]
    return out


def _histograms(rows: list[TraceDiagnosisRow]) -> Histograms:
    """{n, errors, blame_hist, stage_hist}: the share of named hops and stages."""
    named = [r for r in rows if r["pred_hop"] is not None]
    # A diagnosis that names a hop names its stage (`DiagnosisFields`).
    stages = Counter(stage for r in named if (stage := r["pred_stage"]) is not None)
    return Histograms(n=len(rows), errors=len(rows) - len(named),
                      blame_hist={str(h): round(c / len(named), 6) for h, c in
                                  sorted(Counter(r["pred_hop"] for r in named).items())},
                      stage_hist={s: round(c / len(named), 6)
                                  for s, c in sorted(stages.items())})


def summarise(items: list[ImportedTrace], unmapped: list[Unmapped],
              rows: list[TraceDiagnosisRow], diagnosers: list[Diagnoser],
              config: StudyConfig, *, source: str, gold: str | None,
              labels: Labels | None = None, labels_path: str | None = None,
              hop_budget: int | None = None) -> TracesSummary:
    scored = scorable(rows)
    scored_summaries = (diagnoser_summaries([scored_row(r) for r in scored], diagnosers,
                                            config) if scored else {})
    failed = [scored_row(r) for r in scored if r["fault"] != CLEAN and diagnosers
              and r["diagnoser"] == diagnosers[0].name]
    per: dict[str, DiagnoserTraces] = {}
    for d in diagnosers:
        mine = [r for r in rows if r["diagnoser"] == d.name]
        scored_too = ({"scored": scored_summaries[d.name]} if d.name in scored_summaries
                      else {})
        per[d.name] = DiagnoserTraces(
            **dict(_histograms(mine)),
            by_mode={mode: _histograms([r for r in mine if r["mode"] == mode])
                     for mode in sorted({r["mode"] for r in mine})},
            uses_gold=d.uses_gold, probing=d.probing, stand_in=d.stand_in, **scored_too)
    traces_left = [u for u in unmapped if not u.span_id]
    return TracesSummary(
        source=source, gold=gold,
        traces=len(items) + len(traces_left), mapped=len(items),
        not_mapped=[u.row() for u in traces_left],
        mapping=dict(sorted(Counter(i.mapping for i in items).items())),
        unmapped_spans=SpansLeftOut(n=len(unmapped) - len(traces_left),
                                    by_reason=dict(sorted(Counter(
                                        u.reason for u in unmapped if u.span_id).items()))),
        modes=dict(sorted(Counter(i.trace.mode for i in items).items())),
        labels=LabelCounts(
            source=labels_path or "records",
            labelled=sum(label(i, labels)["fault"] is not None for i in items),
            unmatched=_unmatched(items, labels),
            scored_failed=len({r["trace_id"] for r in scored if r["fault"] != CLEAN}),
            scored_clean=len({r["trace_id"] for r in scored if r["fault"] == CLEAN}),
            chance_expected=chance_baseline(failed)),
        diagnosers=per, **({"hop_budget": hop_budget} if hop_budget is not None else {}))


def chance_baseline(failed: list[DiagnosisRow]) -> ChanceExpected | None:
    """What a uniform hop in 1..n scores on the scored failed traces (analytic), overall
    and by labelled hop; None without any."""
    if not failed:
        return None
    expected = chance_expected_accuracy([attribution(r) for r in failed])
    return ChanceExpected(overall=expected["expected_acc"],
                          by_depth={h: v["expected_acc"] for h, v in expected["by_depth"].items()})


def _unmatched(items: list[ImportedTrace], labels: Labels | None) -> list[str]:
    """Labelled trace ids that no trace in the file has (they are not scored)."""
    if not labels:
        return []
    used = {id(given_label(i, labels)) for i in items}
    return sorted(k for k, v in labels.items() if id(v) not in used)


def run_diagnose_traces(path: Path, fmt: str, diagnosers: list[Diagnoser], out: Path,
                        config: StudyConfig, skills: Any, *,
                        examples: list[Example] | None = None, gold: str | None = None,
                        retrieval_tools: tuple[str, ...] = (),
                        hop_budget: int | None = None,
                        labels: Labels | None = None,
                        labels_path: str | None = None,
                        probing: Probing | None = None) -> TracesSummary:
    """Import, diagnose, write the outputs; returns the summary. `hop_budget`: the
    agent's configured hop budget, when its user gives it (None: unknown); `labels`:
    the labels file's entries (`diagnose.labels.read_labels`), for scoring; `probing`:
    the traces' agent, for the probes on the labelled failures."""
    check_diagnosers(diagnosers, has_gold=examples is not None, has_agent=probing is not None)
    items, unmapped = load_traces(path, fmt, retrieval_tools)
    out.mkdir(parents=True, exist_ok=True)
    write_traces(out / "traces.jsonl", (i.trace for i in items))
    write_atomic(out / "unmapped.jsonl",
                 "".join(canonical_json(u.row()) + "\n" for u in unmapped))
    find = gold_lookup(examples) if examples is not None else (lambda _t: None)
    rows: list[TraceDiagnosisRow] = []
    with open(out / "diagnoses.jsonl", "w", encoding="utf-8") as fh:
        for item in items:
            mine = diagnose_one(item, diagnosers, find(item.trace), config, skills, hop_budget,
                                labels, probing)
            fh.write("".join(canonical_json(r) + "\n" for r in mine))
            fh.flush()
            rows += mine
    summary = summarise(items, unmapped, rows, diagnosers, config, source=str(path), gold=gold,
                        labels=labels, labels_path=labels_path, hop_budget=hop_budget)
    RunDir(out).write_model(summary)
    from cuer_agent.studies.diagnose.traces_report import report_markdown

    write_atomic(out / "report.md", report_markdown(summary))
    return summary

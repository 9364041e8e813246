"""One entry point per study: a validated `StudyConfig` in, a finished run directory and
its typed summary out. `cuer_agent.api` hands users the summaries; the CLI also prints
this invocation's model calls and the study's notes (`Finished`).

Each entry point resolves what the config leaves open (the synthetic world's question
hop count, `config.with_question_hops`), checks what it can before any work (the agent,
the diagnosers, the executor policy, the backend), opens or resumes its run directory
and runs the study there. The same config and seed give the same bytes, through the API
or the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from cuer_agent._json import JsonRow
from cuer_agent.config import DEFAULT_CONFIG, StudyConfig, with_question_hops, with_values
from cuer_agent.data import Dataset, is_generated
from cuer_agent.errors import ConfigError
from cuer_agent.execution import Mode
from cuer_agent.llm.backends import SkillClient
from cuer_agent.studies._common.session import (
    DEFAULT_EXECUTION,
    Execution,
    agent_executor,
    check_agent,
    open_run,
    open_study,
    recorded,
    run_path,
    single_shot_executor,
    skill_client,
)
from cuer_agent.studies._common.summary_model import RunSummary
from cuer_agent.studies.cuer.summary_model import CuerSummary
from cuer_agent.studies.diagnose.labels import TraceLabel
from cuer_agent.studies.diagnose.steps import diagnose_step_logs, is_step_source
from cuer_agent.studies.diagnose.steps_model import StepTracesSummary
from cuer_agent.studies.diagnose.summary_model import TracesSummary
from cuer_agent.studies.evaluate.summary_model import EvaluateSummary
from cuer_agent.studies.propagation.summary_model import PropagateSummary

if TYPE_CHECKING:
    from cuer_agent.studies.diagnose.traces import Probing

S = TypeVar("S")

EVALUATE_N = 100
"""`evaluate` without [data] n: the first 100 examples."""


@dataclass(frozen=True)
class Finished(Generic[S]):
    """A finished study: its summary, its run directory, the name of the data set it
    read, this invocation's model calls (`SkillClient.ledger`: a resumed run counts only
    what it asked now) and lines the study has to say beyond its summary."""

    summary: S
    path: Path
    dataset: str
    invocation: JsonRow
    notes: tuple[str, ...] = ()


def evaluate(config: StudyConfig, *, out: Path | None = None,
             execution: Execution = DEFAULT_EXECUTION,
             command: str = "cuer_agent.evaluate") -> Finished[EvaluateSummary]:
    """CUE-R baseline + agentic fault propagation + diagnoser comparison (its report is
    the layer above's: `cuer_agent.report.write_report`). `command` is the provenance the
    summary records."""
    from cuer_agent.diagnosers import get_diagnoser
    from cuer_agent.provenance import provenance
    from cuer_agent.studies.evaluate.runner import run_evaluate

    config = with_question_hops(config, config.agent.hops)
    if config.data.n is None:
        config = with_values(config, {"data": {"n": EVALUATE_N}})
    check_agent(config.agent.factory)
    for name in config.diagnose.names:
        get_diagnoser(name)
    parallel, skills, ds = open_study(config.backend, config.data, execution)
    run_dir = open_run(out or run_path("evaluate", config.data.dataset,
                                       agent=config.agent.factory, hops=config.agent.hops),
                       {"command": "evaluate", "source": ds.source,
                        "study": config.model_dump(mode="json")})
    summary = run_evaluate(ds, skills, run_dir, config, show_progress=execution.progress,
                           parallel=parallel,
                           provenance=provenance(command, config.data.path))
    return Finished(summary, run_dir.path, ds.name, skills.ledger.to_dict())


def run(config: StudyConfig, *, mode: Mode = "agentic", natural: bool = False,
        out: Path | None = None, execution: Execution = DEFAULT_EXECUTION) -> Finished[RunSummary]:
    """Run the agent (or, `mode` single_shot, the single-shot system) over the data and
    write `traces.jsonl` + `summary.json` + `ledger.json`. `natural`: also label the runs
    that ended wrong from the gold chain and diagnose them, into `natural/`."""
    from cuer_agent.run_dir import canonical_json
    from cuer_agent.studies._common.dataset_run import run_dataset

    agent = config.agent
    if mode not in ("agentic", "single_shot"):
        raise ConfigError(f"mode must be agentic or single_shot, got {mode!r}")
    if agent.factory is not None and mode != "agentic":
        raise ConfigError("[agent] factory (--agent) runs your agent: it does not combine "
                          "with mode single_shot")
    if natural and mode != "agentic":
        raise ConfigError("natural (--natural) labels an agent's hops: it does not combine "
                          "with mode single_shot")
    config = with_question_hops(config, agent.hops)
    data = config.data
    check_agent(agent.factory)
    parallel, skills, ds = open_study(config.backend, data, execution)
    out = out or (run_path("run", data.dataset, agent=agent.factory, hops=agent.hops)
                  if mode == "agentic" else run_path("run-single-shot", data.dataset))
    gold = data.gold_hops_flag()
    run_dir = open_run(out, {
        "command": "run", "dataset": ds.name, "source": ds.source, "n": data.n,
        "mode": mode, "hop_budget": agent.hops, "k": agent.k, "seed": data.seed,
        "retries_per_hop": agent.retries_per_hop, "agent": agent.factory,
        "backend": recorded(config.backend, skills),
        # recorded only where set apart from the budget: a run records what it always did
        **({"hops": data.hops} if is_generated(data.dataset) and data.hops != agent.hops
           else {}),
        **({"gold_hops": gold} if gold else {})})
    summary = run_dataset(ds, agent_executor(config, skills, mode), run_dir,
                          show_progress=execution.progress, parallel=parallel)
    invocation = skills.ledger.to_dict()
    (run_dir.path / "ledger.json").write_text(canonical_json(invocation, indent=2) + "\n")
    notes: tuple[str, ...] = ()
    if natural:
        notes = (_label_natural(run_dir.path, ds, config, skills, parallel.concurrency),)
    return Finished(summary, run_dir.path, ds.name, invocation, notes)


def _label_natural(path: Path, ds: Dataset, config: StudyConfig, skills: SkillClient,
                   concurrency: int) -> str:
    """`run(natural=True)`: the natural-failure part over the run's traces, into
    natural/; the line that says what it found."""
    from cuer_agent.run_dir import RunDir
    from cuer_agent.studies._common.dataset_run import retriever_factory
    from cuer_agent.studies.diagnose.runner import build_diagnosers
    from cuer_agent.studies.natural.probes import natural_probing
    from cuer_agent.studies.natural.runner import NATURAL, run_natural
    from cuer_agent.trace import Trace

    traces = [Trace.model_validate(row["trace"]) for row in RunDir(path).rows("traces.jsonl")]
    probing = natural_probing(agent_executor(config, skills), retriever_factory(ds), ds, config)
    part = run_natural(((t.example_id, t) for t in traces), ds,
                       build_diagnosers(config, skills), path / NATURAL, config, skills,
                       hop_budget=config.agent.hops, concurrency=concurrency, probing=probing)
    counts = part.counts
    return (f"natural failures {counts.failed}, placed by {counts.rule}: {counts.labelled}"
            f" → {path / NATURAL}")


def cuer(config: StudyConfig, *, out: Path | None = None,
         execution: Execution = DEFAULT_EXECUTION) -> Finished[CuerSummary]:
    """Single-shot CUE-R: REMOVE / REPLACE / DUPLICATE one evidence item, four axes. It
    runs no agent: the synthetic world asks its mix of questions unless [data] says."""
    from cuer_agent.studies._common.dataset_run import retriever_factory
    from cuer_agent.studies._common.pools import single_shot_data
    from cuer_agent.studies._common.recorded_config import cuer_record
    from cuer_agent.studies.cuer.report import write_cuer_summary
    from cuer_agent.studies.cuer.runner import run_cuer

    config = with_question_hops(config, None)
    data, study = config.data, config.cuer
    parallel, skills, ds = open_study(config.backend, data, execution)
    ds = single_shot_data(ds, study.questions, study.pool_size)
    run_dir = open_run(out or run_path("cuer", data.dataset), cuer_record(
        source=ds.source, data=data.model_dump(mode="json"),
        backend=config.backend.model_dump(mode="json"), cuer=study))
    run_cuer(ds, single_shot_executor(config, skills), run_dir, study,
             retriever_for=retriever_factory(ds), show_progress=execution.progress,
             parallel=parallel)
    summary = write_cuer_summary(run_dir, study)
    return Finished(summary, run_dir.path, ds.name, skills.ledger.to_dict())


def propagate(config: StudyConfig, *, out: Path | None = None,
              execution: Execution = DEFAULT_EXECUTION) -> Finished[PropagateSummary]:
    """Agentic fault propagation: inject each fault at hop h, let the agent re-execute."""
    from cuer_agent.studies._common.recorded_config import propagate_record
    from cuer_agent.studies.propagation.report import run_and_summarize

    config = with_question_hops(config, config.agent.hops)
    data, agent = config.data, config.agent
    check_agent(agent.factory)
    parallel, skills, ds = open_study(config.backend, data, execution)
    out = out or run_path("propagate", data.dataset, agent=agent.factory, hops=agent.hops)
    run_dir = open_run(out, propagate_record(
        source=ds.source, hops=agent.hops, retries_per_hop=agent.retries_per_hop,
        agent=agent.factory, k=agent.k,
        data={"dataset": ds.name, "path": data.path, "n": data.n,
              "hops": data.hops if is_generated(data.dataset) else None,
              "seed": data.seed,
              "gold_hops": data.gold_hops_flag(),
              "redundancy": data.redundancy},
        backend=recorded(config.backend, skills), propagation=config.propagation))
    summary = run_and_summarize(ds, agent_executor(config, skills), run_dir, config.propagation,
                                show_progress=execution.progress, parallel=parallel)
    return Finished(summary, run_dir.path, ds.name, skills.ledger.to_dict())


class TraceSource(BaseModel):
    """Traces of any agent to diagnose, and what is known about them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path
    """OpenInference spans (OTLP/JSON lines) or cuer traces JSONL; or failure logs of
    multi-agent teams: a Who&When file or folder, AgentRx trajectories."""
    format: str = "openinference"
    """openinference, cuer, whowhen or agentrx (checked where the file is read)."""
    retrieval_tools: tuple[str, ...] = ()
    """Names of TOOL spans that are searches (a ReAct agent's search tool)."""
    hop_budget: int | None = None
    """The hop budget the agent ran with (not in the traces), if known."""
    gold: Path | None = None
    """A gold file in its data set's original format: gold-reading diagnosers, and the
    labels from the gold chain when `labels` is not given."""
    dataset: str | None = None
    """The gold file's data set; given with `gold`."""
    labels: Path | None = None
    """Labels JSONL (docs/schemas/labels.schema.json): scores the diagnosers; for
    `agentrx`, AgentRx's labels file (JSON)."""
    reference: Path | None = None
    """`agentrx` only: the Who&When logs its labels re-annotate (a file or folder); the two
    label sets' agreement is reported as the ceiling of any diagnoser on them."""
    agent: str | None = None
    """The agent that ran the traces (``module:factory``; cuer-agent's own is
    ``cuer_agent.graphs.agent:build``): the probes re-execute it on the failures' examples
    with the repairs it allows. Needs `gold` (the data file the traces ran on)."""

    @model_validator(mode="after")
    def _gold_with_its_dataset(self) -> TraceSource:
        if (self.gold is None) != (self.dataset is None):
            raise ValueError("gold and dataset go together (--gold and --dataset)")
        if self.agent is not None and self.gold is None:
            raise ValueError("agent re-executes the traces' agent on their examples: give "
                             "the data file they ran on (--gold FILE --dataset NAME)")
        if self.hop_budget is not None and self.hop_budget < 1:
            raise ValueError(f"hop_budget must be >= 1, got {self.hop_budget}")
        return self


def diagnose(source: TraceSource, *, out: Path, config: StudyConfig = DEFAULT_CONFIG,
             diagnosers: Sequence[str] | None = None,
             execution: Execution = DEFAULT_EXECUTION
             ) -> Finished[TracesSummary] | Finished[StepTracesSummary]:
    """Diagnose traces of any agent into `out`: trace-only diagnosers (None: every one),
    gold-reading ones with a gold file; scored against labels (given, or from the gold
    chain). Model-backed diagnosers ask [backend]. Failure logs of multi-agent teams
    (`format` whowhen or agentrx) are step traces: step diagnosers, scored against the
    labels inside the logs (Who&When) or in `labels` (AgentRx)."""
    from cuer_agent.data import load_dataset
    from cuer_agent.diagnosers import get_diagnoser
    from cuer_agent.studies.diagnose.labels import read_labels
    from cuer_agent.studies.diagnose.traces import (
        check_diagnosers,
        run_diagnose_traces,
        trace_only_diagnosers,
    )

    if is_step_source(source.format, source.path):  # failure logs of multi-agent teams
        logs, ledger = diagnose_step_logs(source.format, source.path, source.labels, out,
                                          diagnosers, config, execution, source.reference)
        _record_diagnose(source, out, config, diagnosers, steps=True)
        return Finished(logs, out, source.format, ledger)
    chosen = (tuple(diagnosers) if diagnosers else
              (*trace_only_diagnosers(), *(PROBES if source.agent is not None else ())))
    # before the model or the data loads: unknown, probing without the agent, or gold
    # without a gold file
    check_diagnosers([get_diagnoser(name) for name in chosen], has_gold=source.gold is not None,
                     has_agent=source.agent is not None)
    check_agent(source.agent)
    given = read_labels(source.labels) if source.labels is not None else None
    skills = skill_client(config.backend, config.diagnose.seed, execution)
    made = [get_diagnoser(name, skills=skills) for name in chosen]
    data = (load_dataset(source.dataset, source.gold)
            if source.gold and source.dataset else None)
    labels_path = str(source.labels) if source.labels else None
    notes: tuple[str, ...] = ()
    if given is None and data is not None:  # no labels file: label from the gold chain
        given, labels_path, note = _gold_chain_labels(source, data, config, out)
        notes = (note,)
    probing = (_traces_agent(source, data, config, skills)
               if source.agent is not None and data is not None else None)
    summary = run_diagnose_traces(source.path, source.format, made, out, config, skills,
                                  examples=data.examples if data else None,
                                  gold=str(source.gold) if source.gold else None,
                                  retrieval_tools=source.retrieval_tools,
                                  hop_budget=source.hop_budget, labels=given or None,
                                  labels_path=labels_path, probing=probing)
    _record_diagnose(source, out, config, diagnosers, steps=False)
    return Finished(summary, out, data.name if data else "", skills.ledger.to_dict(), notes)


PROBES = ("frozen-hop", "suffix-regen", "frozen-hop-free", "suffix-regen-free")
"""The probes `diagnose` runs by default when it is given the traces' agent."""


def _traces_agent(source: TraceSource, data: Dataset, config: StudyConfig,
                  skills: SkillClient) -> Probing:
    """The probing of `diagnose --agent`: the agent that ran the traces, at the hop budget
    they ran with ([agent] hops when not given), on the gold file's examples."""
    from cuer_agent.studies._common.dataset_run import retriever_factory
    from cuer_agent.studies.natural.probes import natural_probing

    agent = config.agent.model_copy(update={
        "factory": source.agent,
        **({"hops": source.hop_budget} if source.hop_budget is not None else {})})
    ran = config.model_copy(update={"agent": agent})
    return natural_probing(agent_executor(ran, skills), retriever_factory(data), data, config)


def _record_diagnose(source: TraceSource, out: Path, config: StudyConfig,
                     diagnosers: Sequence[str] | None, *, steps: bool) -> None:
    """`out/config.json`, once the diagnose finished: what it read and ran (`load_run`
    reads it back). Written last: a refused diagnose leaves nothing behind."""
    from cuer_agent.run_dir import canonical_json, write_atomic
    from cuer_agent.studies._common.recorded_config import DiagnoseRunConfig

    def text(path: Path | None) -> str | None:
        return None if path is None else str(path)

    record = DiagnoseRunConfig(
        command="diagnose", source=str(source.path), format=source.format,
        summary="steps" if steps else "traces",
        diagnosers=list(diagnosers) if diagnosers else None, labels=text(source.labels),
        gold=text(source.gold), dataset=source.dataset, hop_budget=source.hop_budget,
        reference=text(source.reference), backend=config.backend)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "config.json", canonical_json(record.model_dump(mode="json"),
                                                     indent=2) + "\n")


def _gold_chain_labels(source: TraceSource, data: Dataset, config: StudyConfig,
                       out: Path) -> tuple[dict[str, TraceLabel], str, str]:
    """Labels of the traces from the gold chain (`cuer_agent.studies.natural`), written to
    `out/labels.jsonl` (for reuse as `labels`): the labels, their file, and the line that
    says how many failures they place."""
    from cuer_agent.studies.diagnose.traces import load_traces
    from cuer_agent.studies.natural.labels import labels_from_gold
    from cuer_agent.studies.natural.runner import write_labels

    items, _ = load_traces(source.path, source.format, source.retrieval_tools)
    given, labelled = labels_from_gold(((i.trace_id, i.trace) for i in items), data,
                                       config.propagation.recall_threshold)
    out.mkdir(parents=True, exist_ok=True)
    write_labels(labelled, out)
    failed = sum(lab.failed for lab in labelled)
    placed = sum(1 for label in given.values() if label.outcome == "failed")
    path = out / "labels.jsonl"
    return (given, str(path), f"labels from the gold chain: {len(given)} traces, {placed} of "
            f"{failed} failures placed → {path}")

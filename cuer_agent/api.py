"""The Python API: one function per study, each taking a validated `StudyConfig` and
returning its typed summary, and `load_run`, which reads a run directory back as typed
objects. The CLI is a thin layer over the same entry points (`cuer_agent.studies.entry`).

    import cuer_agent
    from cuer_agent.config import AgentSection, DataSection, StudyConfig

    config = StudyConfig(data=DataSection(n=10), agent=AgentSection(hops=3))
    summary = cuer_agent.evaluate(config)  # an EvaluateSummary; docs/api.md says more

Every function writes its run directory (`out`; default `runs/<command>-...` as the CLI
names it) and resumes one that holds the same config. `execution` says where and how
fast a study runs (`Execution`: cache, concurrency, executor); it never changes a result.
A config, flag or file the study refuses raises a `cuer_agent.errors.CuerError`
(`ConfigError` for a value, `DataError` for a file) whose message is one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cuer_agent.config import DEFAULT_CONFIG, StudyConfig
from cuer_agent.errors import ConfigError, DataError
from cuer_agent.execution import Mode
from cuer_agent.run_dir import read_rows
from cuer_agent.studies import entry
from cuer_agent.studies._common.recorded_config import (
    AnyRunConfig,
    EvaluateRunConfig,
    PropagateRunConfig,
    RunCommandConfig,
    read_run_config,
)
from cuer_agent.studies._common.session import DEFAULT_EXECUTION, Execution
from cuer_agent.studies._common.summary_model import RunSummary
from cuer_agent.studies.cuer.summary_model import CuerSummary
from cuer_agent.studies.diagnose.steps_model import StepTracesSummary
from cuer_agent.studies.diagnose.summary_model import TracesSummary
from cuer_agent.studies.entry import TraceSource
from cuer_agent.studies.evaluate.summary_model import EvaluateSummary
from cuer_agent.studies.propagation.summary_model import PropagateSummary
from cuer_agent.studies.schemas import read_summary
from cuer_agent.trace import Trace

__all__ = ["Execution", "LoadedRun", "TraceSource", "cuer", "diagnose", "evaluate",
           "load_run", "propagate", "run"]


def _path(out: str | Path | None) -> Path | None:
    return None if out is None else Path(out)


def evaluate(config: StudyConfig = DEFAULT_CONFIG, *, out: str | Path | None = None,
             execution: Execution = DEFAULT_EXECUTION) -> EvaluateSummary:
    """`cuer-agent evaluate`: the single-shot CUE-R baseline, agentic fault propagation
    and the diagnoser comparison over the first 100 examples (or [data] n), with
    `report.md` and `report.html`."""
    from cuer_agent.report import write_report

    done = entry.evaluate(config, out=_path(out), execution=execution)
    write_report(done.path)
    return done.summary


def run(config: StudyConfig = DEFAULT_CONFIG, *, mode: Mode = "agentic", natural: bool = False,
        out: str | Path | None = None, execution: Execution = DEFAULT_EXECUTION) -> RunSummary:
    """`cuer-agent run`: the agent (or the single-shot system) over the data; `natural`
    also labels and diagnoses the runs that ended wrong (into `natural/`)."""
    return entry.run(config, mode=mode, natural=natural, out=_path(out),
                     execution=execution).summary


def cuer(config: StudyConfig = DEFAULT_CONFIG, *, out: str | Path | None = None,
         execution: Execution = DEFAULT_EXECUTION) -> CuerSummary:
    """`cuer-agent cuer`: single-shot CUE-R, REMOVE / REPLACE / DUPLICATE one evidence
    item, measured on four axes."""
    return entry.cuer(config, out=_path(out), execution=execution).summary


def propagate(config: StudyConfig = DEFAULT_CONFIG, *, out: str | Path | None = None,
              execution: Execution = DEFAULT_EXECUTION) -> PropagateSummary:
    """`cuer-agent propagate`: each fault injected at each hop, the suffix re-executed."""
    return entry.propagate(config, out=_path(out), execution=execution).summary


def diagnose(source: TraceSource | LoadedRun | str | Path, *, out: str | Path,
             config: StudyConfig = DEFAULT_CONFIG, diagnosers: Sequence[str] | None = None,
             execution: Execution = DEFAULT_EXECUTION) -> TracesSummary | StepTracesSummary:
    """`cuer-agent diagnose`: the traces of any agent diagnosed (trace-only diagnosers by
    default), and scored when labels are given or made from a gold file; failure logs of
    multi-agent teams (`format` whowhen or agentrx) as step traces, scored by step and
    agent (`StepTracesSummary`). `source` is a `TraceSource`, or a run directory (a path,
    or `load_run`'s `LoadedRun`): its traces, with the hop budget it ran with, or a trace
    file (OpenInference spans)."""
    return entry.diagnose(trace_source(source), out=Path(out), config=config,
                          diagnosers=diagnosers, execution=execution).summary


def trace_source(source: object) -> TraceSource:
    """What `diagnose` reads from `source` (see `diagnose`); anything else is one
    `ConfigError` line saying what it takes."""
    if isinstance(source, TraceSource):
        return source
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise ConfigError(f"diagnose: {path}: no such file or directory")
        if path.is_file():
            return TraceSource(path=path)
        if not (path / "config.json").exists():
            raise ConfigError(f"diagnose: {path} is a folder but not a run directory (no "
                              "config.json): for a folder of failure logs give "
                              "TraceSource(path=..., format='whowhen' or 'agentrx')")
        source = load_run(path)
    if not isinstance(source, LoadedRun):
        raise ConfigError("diagnose takes a TraceSource, a run directory (a path or "
                          f"load_run's LoadedRun) or a trace file, not a "
                          f"{type(source).__name__}")
    config = source.config
    if source.command == "diagnose":
        raise ConfigError(f"diagnose: {source.path} is a diagnose output, not a run: give "
                          "the traces it read, or its traces.jsonl as TraceSource(format='cuer')")
    budget = (config.hop_budget if isinstance(config, RunCommandConfig | PropagateRunConfig)
              else config.study.agent.hops if isinstance(config, EvaluateRunConfig) else None)
    if source.command == "cuer":
        raise ConfigError(f"diagnose: {source.path} is a cuer run (single-shot CUE-R): it has "
                          "no agent traces to diagnose")
    return TraceSource(path=source.traces_path, format="cuer", hop_budget=budget)


Summary = (RunSummary | CuerSummary | PropagateSummary | EvaluateSummary | TracesSummary
           | StepTracesSummary)

SUMMARIES: dict[str, type[Summary]] = {
    "run": RunSummary, "cuer": CuerSummary, "propagate": PropagateSummary,
    "evaluate": EvaluateSummary}
"""A run's `command` → the model of its `summary.json`."""


@dataclass(frozen=True)
class LoadedRun:
    """A finished run directory, typed: its recorded config and its summary."""

    path: Path
    config: AnyRunConfig
    summary: Summary

    @property
    def command(self) -> str:
        return self.config.command

    @property
    def traces_path(self) -> Path:
        """Where the run's traces are (`evaluate`: its agentic part's)."""
        return self.path / ("agentic" if self.command == "evaluate" else "") / "traces.jsonl"

    def traces(self) -> list[Trace]:
        """Every trace the run wrote (`evaluate`: its agentic part's; `diagnose`: the
        traces it imported), in file order."""
        path = self.traces_path
        if not path.exists():
            raise DataError(path, "no such file")
        # a study's rows wrap their trace with its spend; diagnose writes the traces bare
        return [Trace.model_validate(row if self.command == "diagnose" else row["trace"])
                for row in read_rows(path)]


def load_run(path: str | Path) -> LoadedRun:
    """A run directory (of `run`, `cuer`, `propagate`, `evaluate` or `diagnose`) read back: its
    `config.json` and `summary.json` as their models. A missing, damaged or unknown file
    is a `CuerError` naming it."""
    path = Path(path)
    config = read_run_config(path)
    model: type[Summary] = SUMMARIES[config.command] if config.command != "diagnose" else (
        StepTracesSummary if config.summary == "steps" else TracesSummary)
    return LoadedRun(path, config, read_summary(path / "summary.json", model))

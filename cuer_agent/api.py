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
from cuer_agent.errors import DataError
from cuer_agent.execution import Mode
from cuer_agent.run_dir import read_rows
from cuer_agent.studies import entry
from cuer_agent.studies._common.recorded_config import AnyRunConfig, read_run_config
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


def diagnose(source: TraceSource, *, out: str | Path, config: StudyConfig = DEFAULT_CONFIG,
             diagnosers: Sequence[str] | None = None,
             execution: Execution = DEFAULT_EXECUTION) -> TracesSummary | StepTracesSummary:
    """`cuer-agent diagnose`: the traces of any agent diagnosed (trace-only diagnosers by
    default), and scored when labels are given or made from a gold file; failure logs of
    multi-agent teams (`format` whowhen or agentrx) as step traces, scored by step and
    agent (`StepTracesSummary`)."""
    return entry.diagnose(source, out=Path(out), config=config, diagnosers=diagnosers,
                          execution=execution).summary


Summary = RunSummary | CuerSummary | PropagateSummary | EvaluateSummary

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

    def traces(self) -> list[Trace]:
        """Every trace the run wrote (`evaluate`: its agentic part's), in file order."""
        path = self.path / ("agentic" if self.command == "evaluate" else "") / "traces.jsonl"
        if not path.exists():
            raise DataError(path, "no such file")
        return [Trace.model_validate(row["trace"]) for row in read_rows(path)]


def load_run(path: str | Path) -> LoadedRun:
    """A run directory (of `run`, `cuer`, `propagate` or `evaluate`) read back: its
    `config.json` and `summary.json` as their models. A missing, damaged or unknown file
    is a `CuerError` naming it."""
    path = Path(path)
    config = read_run_config(path)
    return LoadedRun(path, config, read_summary(path / "summary.json",
                                                SUMMARIES[config.command]))

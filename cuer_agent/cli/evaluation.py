"""The whole evaluation and what comes after a run: `evaluate` (CUE-R baseline + agentic
fault propagation + diagnoser comparison), `replay` (re-execute one stored record) and
`report` (rebuild an evaluate run's report).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuer_agent.cli import _options as opt
from cuer_agent.cli._app import command
from cuer_agent.cli._study import (
    command_line,
    print_skill_table,
    replayed_engine,
    seeded,
    study_config,
)
from cuer_agent.diagnosers._base import default_diagnosers, diagnoser_help
from cuer_agent.errors import CuerError
from cuer_agent.studies._common.session import Execution, check_agent, skill_client


@command("replay")
def replay_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A cuer or propagate run directory.")],
    record: Annotated[str, typer.Option(help="Record id, e.g. syn-0-3/query_drift@2.")],
    agent: Annotated[str | None, typer.Option(
        "--agent", help="The run's agent, if its recorded --agent reference moved "
                        "(default: the one in config.json).")] = None,
    timeout: opt.Timeout = None,
    cache: opt.CachePath = None,
    no_cache: opt.NoCache = False,
) -> None:
    """Re-execute one stored record and check that the same trace comes out (exit 1 if not)."""
    from cuer_agent.studies._common.recorded_config import absent_keys
    from cuer_agent.studies.replay import replay, replayable_config

    run_config = replayable_config(run_dir)  # missing, damaged or not replayable → exit 2
    skills = skill_client(replayed_engine(run_config.backend, timeout), run_config.data.seed,
                          Execution(cache=cache, use_cache=not no_cache))
    check_agent(agent)
    result = replay(run_dir, run_config, record, skills, agent)
    if result.identical:
        typer.echo(f"{record}: replayed trace is identical ({len(result.stored)} bytes)")
        return
    typer.echo(f"{record}: replayed trace DIFFERS from the stored one", err=True)
    absent = absent_keys(run_config)
    if absent:
        typer.echo(f"note: {run_dir / 'config.json'} has no {', '.join(absent)}; replay used "
                   "the default (the run recorded it: was the file edited?)", err=True)
    raise typer.Exit(code=1)


@command("evaluate")
def evaluate_cmd(
    ctx: typer.Context,
    agent_flags: opt.AgentFlags = opt.AGENT_FLAGS,  # first: the provenance's order
    study_flags: opt.StudyFlags = opt.STUDY_FLAGS,
    data_flags: opt.DataFlags = opt.DATA_FLAGS,
    fault_flags: opt.FaultFlags = opt.FAULT_FLAGS,
    diagnosers: Annotated[str | None, typer.Option(
        help=f"Comma-separated diagnosers (default: {', '.join(default_diagnosers())}): "
             f"{diagnoser_help()}.")] = None,
    llm: opt.ModelFlags = opt.MODEL_FLAGS,
    execution: opt.ExecutionFlags = opt.EXECUTION_FLAGS,
) -> None:
    """CUE-R baseline + agentic fault propagation + diagnoser comparison, with a report."""
    from cuer_agent.report import write_report
    from cuer_agent.studies import entry
    from cuer_agent.studies.evaluate.report import print_headline

    study = seeded(study_config(study_flags.config, data_flags, agent_flags, fault_flags, llm,
                                diagnose={"names": opt.names(diagnosers) if diagnosers else None}),
                   "propagation", "cuer")
    done = entry.evaluate(study, out=study_flags.out, execution=execution.execution(),
                          command=command_line(ctx))
    console = print_headline(done.summary, done.invocation)
    print_skill_table(done.invocation, study.backend.name)
    md, html = write_report(done.path)
    console.print(f"→ {done.path}  ({md.name}, {html.name})")


@command("report")
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="An evaluate run directory.")],
) -> None:
    """Rebuild report.md and report.html from a run directory's summary.json."""
    from cuer_agent.report import write_report

    if not (run_dir / "summary.json").exists():
        raise CuerError(f"{run_dir / 'summary.json'}: no such file (not a finished run)")
    md, html = write_report(run_dir)
    typer.echo(f"→ {md}\n→ {html}")

"""The commands that run a study and write a run directory: `run`, `cuer`, `propagate`.

Each takes --config (a TOML study config, `cuer_agent.config.StudyConfig`); the flags
given on the command line override the file, and without one the config's defaults are
the flags' defaults (`cuer_agent.cli._options`: a flag left out is None). Each turns its
flags into one validated config, calls its study (`cuer_agent.studies.entry`, which the
Python API `cuer_agent.api` calls too) and prints what came of it. `evaluate`, `replay`
and `report` are in `cuer_agent.cli.evaluation`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from cuer_agent.cli import _options as opt
from cuer_agent.cli._app import command
from cuer_agent.cli._study import (
    print_skill_table,
    seeded,
    study_config,
    warn_request_errors,
)
from cuer_agent.errors import CuerError

if TYPE_CHECKING:
    from cuer_agent.trace import Trace

MODES = {"agentic": "agentic", "single-shot": "single_shot", "single_shot": "single_shot"}


def wide_console() -> Console:
    return Console(width=max(Console().width, 120))


@command("run")
def run_cmd(
    study_flags: opt.StudyFlags = opt.STUDY_FLAGS,
    data_flags: opt.DataFlags = opt.DATA_FLAGS,
    agent_flags: opt.AgentFlags = opt.AGENT_FLAGS,
    mode: Annotated[str, typer.Option(help="agentic or single-shot.")] = "agentic",
    k: Annotated[int | None, typer.Option(help="Evidence items per retrieval "
                                          "(default 5).")] = None,
    llm: opt.ModelFlags = opt.MODEL_FLAGS,
    execution: opt.ExecutionFlags = opt.EXECUTION_FLAGS,
    natural: Annotated[bool, typer.Option(
        "--natural", help="Also label the runs that ended wrong from the data set's gold "
                          "chain and diagnose them, into natural/ (labels, OpenInference "
                          "spans, diagnoses, summary).")] = False,
) -> None:
    """Run the agent (or the single-shot system) and write traces.jsonl + summary.json."""
    from cuer_agent.api import load_run
    from cuer_agent.studies import entry

    if mode not in MODES:
        raise CuerError(f"--mode must be agentic or single-shot, got {mode!r}")
    study = study_config(study_flags.config, data_flags, agent_flags, llm, agent={"k": k})
    done = entry.run(study, mode="agentic" if MODES[mode] == "agentic" else "single_shot",
                     natural=natural, out=study_flags.out, execution=execution.execution())
    summary, invocation, acc = done.summary, done.invocation, done.summary.accuracy
    typer.echo(f"{summary.n} examples  soft {acc.soft:.3f}  em {acc.em:.3f}  "
               f"f1 {acc.f1:.3f}  hops used {summary.hops_used}")
    typer.echo(f"skill requests {summary.ledger.requests} (distinct "
               f"{summary.ledger.calls}); this invocation: backend calls "
               f"{invocation['calls']}, cache hits {invocation['cache_hits']}, parse "
               f"failures {invocation['parse_failures']}  → {done.path}")
    warn_request_errors(summary.ledger)
    print_skill_table(invocation, study.backend.name)
    if MODES[mode] == "agentic":
        typer.echo(first_subqueries(load_run(done.path).traces()))
    for note in done.notes:
        typer.echo(note)


def first_subqueries(traces: list[Trace]) -> str:
    """How many runs' first sub-query repeats the whole question instead of asking one step
    of it (`metrics.answer.repeats_question`), and how many name nothing of it
    (`shares_no_word`): the two ways a planner fails to decompose."""
    from cuer_agent.metrics.answer import repeats_question, shares_no_word

    firsts = [(t.hops[0].first_attempt().subquery, t.question) for t in traces if t.hops]
    n = len(firsts)
    repeated = sum(repeats_question(asked, question) for asked, question in firsts)
    unrelated = sum(shares_no_word(asked, question) for asked, question in firsts)
    return (f"first sub-queries that repeat the question: {repeated}/{n}"
            + (f" ({repeated / n:.0%})" if n else "")
            + f"; that share no word with it: {unrelated}/{n}"
            + (f" ({unrelated / n:.0%})" if n else ""))


@command("cuer")
def cuer_cmd(
    study_flags: opt.StudyFlags = opt.STUDY_FLAGS,
    data_flags: opt.DataFlags = opt.DATA_FLAGS,
    two_support: Annotated[bool | None, typer.Option(
        "--two-support", help="Ablation: remove each gold support and both.")] = None,
    duplicate_positions: Annotated[bool | None, typer.Option(
        "--duplicate-positions", help="Ablation: DUPLICATE at end, front, after.")] = None,
    replace_hardness: Annotated[bool | None, typer.Option(
        "--replace-hardness", help="Ablation: REPLACE easy, medium, hard.")] = None,
    weight_sensitivity: Annotated[bool | None, typer.Option(
        "--weight-sensitivity", help="Ablation: D over a grid of weights.")] = None,
    llm: opt.ModelFlags = opt.MODEL_FLAGS,
    execution: opt.ExecutionFlags = opt.EXECUTION_FLAGS,
) -> None:
    """Single-shot CUE-R: REMOVE / REPLACE / DUPLICATE one evidence item, four axes.
    (It runs no agent, so it has no --hops.)"""
    from cuer_agent.studies import entry
    from cuer_agent.studies.cuer.report import cuer_table

    study = seeded(study_config(study_flags.config, data_flags, llm, cuer={
        "two_support": two_support, "duplicate_positions": duplicate_positions,
        "replace_hardness_sweep": replace_hardness,
        "weight_sensitivity": weight_sensitivity}), "cuer")
    done = entry.cuer(study, out=study_flags.out, execution=execution.execution())
    summary = done.summary
    wide_console().print(cuer_table(summary, title=f"CUE-R on {done.dataset} (n={summary.n})"))
    for finding in summary.findings:
        typer.echo(finding)
    warn_request_errors(summary.ledger)
    typer.echo(f"→ {done.path}")


@command("propagate")
def propagate_cmd(
    study_flags: opt.StudyFlags = opt.STUDY_FLAGS,
    data_flags: opt.DataFlags = opt.DATA_FLAGS,
    agent_flags: opt.AgentFlags = opt.AGENT_FLAGS,
    fault_flags: opt.FaultFlags = opt.FAULT_FLAGS,
    hop_operators: Annotated[bool | None, typer.Option(
        help="Also REMOVE/REPLACE/DUPLICATE per hop (default: on).")] = None,
    llm: opt.ModelFlags = opt.MODEL_FLAGS,
    execution: opt.ExecutionFlags = opt.EXECUTION_FLAGS,
) -> None:
    """Agentic fault propagation: inject a fault at hop h, let the agent re-execute."""
    from cuer_agent.studies import entry
    from cuer_agent.studies.propagation.report import propagation_tables

    study = seeded(study_config(study_flags.config, data_flags, agent_flags, fault_flags, llm,
                                propagation={"hop_operators": hop_operators}), "propagation")
    done = entry.propagate(study, out=study_flags.out, execution=execution.execution())
    for table in propagation_tables(done.summary):
        wide_console().print(table)
    warn_request_errors(done.summary.ledger)
    typer.echo(f"→ {done.path}")

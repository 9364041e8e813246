"""The commands that run a study and write a run directory: `run`, `cuer`, `propagate`.

Each takes --config (a TOML study config, `cuer_agent.config.StudyConfig`); the flags
given on the command line override the file, and without one the config's defaults are
the flags' defaults (`cuer_agent.cli._options`: a flag left out is None). `evaluate`,
`replay` and `report` are in `cuer_agent.cli.evaluation`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from cuer_agent.cli._app import app, user_errors
from cuer_agent.cli._options import (
    AGENT_FLAGS,
    DATA_FLAGS,
    EXECUTION_FLAGS,
    MODEL_FLAGS,
    AgentFlags,
    ConfigPath,
    DataFlags,
    ExecutionFlags,
    FaultPersistence,
    Faults,
    ModelFlags,
    Redundancy,
    RunOut,
    Strict,
    names,
    option_groups,
)
from cuer_agent.cli._study import (
    check_agent,
    joined,
    open_run,
    open_study,
    persistence,
    print_skill_table,
    recorded,
    run_path,
    study_sections,
    warn_request_errors,
)
from cuer_agent.data import is_generated
from cuer_agent.errors import CuerError

if TYPE_CHECKING:
    from cuer_agent.config import StudyConfig
    from cuer_agent.data import Dataset
    from cuer_agent.llm.backends import SkillClient
    from cuer_agent.runs import RunDir
    from cuer_agent.trace import Trace


@app.command("run")
@user_errors
@option_groups
def run_cmd(
    ctx: typer.Context,
    out: RunOut = None,
    config: ConfigPath = None,
    data_flags: DataFlags = DATA_FLAGS,
    agent_flags: AgentFlags = AGENT_FLAGS,
    mode: Annotated[str, typer.Option(help="agentic or single-shot.")] = "agentic",
    k: Annotated[int | None, typer.Option(help="Evidence items per retrieval "
                                          "(default 5).")] = None,
    llm: ModelFlags = MODEL_FLAGS,
    execution: ExecutionFlags = EXECUTION_FLAGS,
    natural: Annotated[bool, typer.Option(
        "--natural", help="Also label the runs that ended wrong from the data set's gold "
                          "chain and diagnose them, into natural/ (labels, OpenInference "
                          "spans, diagnoses, summary).")] = False,
) -> None:
    """Run the agent (or the single-shot system) and write traces.jsonl + summary.json."""
    from cuer_agent.config import load_config
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.runs import canonical_json
    from cuer_agent.studies._common.run_agent import run_dataset
    from cuer_agent.trace import Trace

    modes = {"agentic": "agentic", "single-shot": "single_shot", "single_shot": "single_shot"}
    if mode not in modes:
        raise CuerError(f"--mode must be agentic or single-shot, got {mode!r}")
    study = load_config(config)
    data, section = study_sections(study, data_flags, agent_flags, k=k)
    if section.factory is not None and modes[mode] != "agentic":
        raise CuerError("--agent runs your agent: it does not combine with --mode single-shot")
    if natural and modes[mode] != "agentic":
        raise CuerError("--natural labels an agent's hops: it does not combine with --mode "
                        "single-shot")
    check_agent(section.factory)
    agent_config = AgentConfig(mode=modes[mode], hop_budget=section.hops,  # type: ignore[arg-type]
                               k=section.k, retries_per_hop=section.retries_per_hop)
    engine = llm.engine(study)
    parallel, skills, ds = open_study(engine, data, execution, joined(data.gold_hops))
    out = (run_path(out, "run", data.dataset, agent=section.factory, hops=section.hops)
           if agent_config.mode == "agentic" else run_path(out, "run-single-shot", data.dataset))
    run_dir = open_run(out, {
        "command": "run", "dataset": ds.name, "source": ds.source, "n": data.n,
        "mode": agent_config.mode, "hop_budget": section.hops, "k": section.k,
        "seed": data.seed, "retries_per_hop": section.retries_per_hop,
        "agent": section.factory, "backend": recorded(engine, skills),
        # only --gold-hops or a --config file sets these: without them a run records
        # what it always did
        **({"hops": data.hops} if is_generated(data.dataset) and data.hops != section.hops
           else {}),
        **({"gold_hops": joined(data.gold_hops)} if data.gold_hops else {})})
    executor = Executor(skills, agent_config, meta={"backend": engine.name,
                                                    "model": skills.backend.model},
                        agent=section.factory)
    summary = run_dataset(ds, executor, run_dir, show_progress=execution.progress,
                          parallel=parallel)
    invocation = skills.ledger.to_dict()
    (out / "ledger.json").write_text(canonical_json(invocation, indent=2) + "\n")
    acc = summary.accuracy
    typer.echo(f"{summary.n} examples  soft {acc.soft:.3f}  em {acc.em:.3f}  "
               f"f1 {acc.f1:.3f}  hops used {summary.hops_used}")
    typer.echo(f"skill requests {summary.ledger.requests} (distinct "
               f"{summary.ledger.calls}); this invocation: backend calls "
               f"{invocation['calls']}, cache hits {invocation['cache_hits']}, parse "
               f"failures {invocation['parse_failures']}  → {out}")
    warn_request_errors(summary.ledger)
    print_skill_table(invocation, engine.name)
    if agent_config.mode == "agentic":
        traces = [Trace.model_validate(row["trace"]) for row in run_dir.rows("traces.jsonl")]
        typer.echo(first_subqueries(traces))
        if natural:
            label_natural(traces, run_dir, ds, study, skills, section.hops)


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


def label_natural(traces: list[Trace], run_dir: RunDir, ds: Dataset, study: StudyConfig,
                  skills: SkillClient, hops: int) -> None:
    """`run --natural`: the natural-failure part over the run's traces, into natural/."""
    from cuer_agent.studies.diagnose.runner import build_diagnosers
    from cuer_agent.studies.natural.runner import NATURAL, run_natural

    part = run_natural(((t.example_id, t) for t in traces), ds, build_diagnosers(study, skills),
                       run_dir.path / NATURAL, study, skills, hop_budget=hops)
    counts = part.counts
    typer.echo(f"natural failures {counts.failed}, placed by {counts.rule}: {counts.labelled}"
               f" → {run_dir.path / NATURAL}")


@app.command("cuer")
@user_errors
@option_groups
def cuer_cmd(
    ctx: typer.Context,
    out: RunOut = None,
    config: ConfigPath = None,
    data_flags: DataFlags = DATA_FLAGS,
    llm: ModelFlags = MODEL_FLAGS,
    two_support: Annotated[bool | None, typer.Option(
        "--two-support", help="Ablation: remove each gold support and both.")] = None,
    duplicate_positions: Annotated[bool | None, typer.Option(
        "--duplicate-positions", help="Ablation: DUPLICATE at end, front, after.")] = None,
    replace_hardness: Annotated[bool | None, typer.Option(
        "--replace-hardness", help="Ablation: REPLACE easy, medium, hard.")] = None,
    weight_sensitivity: Annotated[bool | None, typer.Option(
        "--weight-sensitivity", help="Ablation: D over a grid of weights.")] = None,
    execution: ExecutionFlags = EXECUTION_FLAGS,
) -> None:
    """Single-shot CUE-R: REMOVE / REPLACE / DUPLICATE one evidence item, four axes.
    (It runs no agent, so it has no --hops.)"""
    from cuer_agent.config import load_config, merged
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.studies._common.run_agent import retriever_factory
    from cuer_agent.studies._common.run_configs import cuer_record
    from cuer_agent.studies.cuer.report import cuer_table, write_cuer_summary
    from cuer_agent.studies.cuer.runner import run_cuer

    study = load_config(config)
    data = data_flags.section(study)
    engine = llm.engine(study)
    cfg = merged(study, "cuer", seed=data.seed, two_support=two_support,
                 duplicate_positions=duplicate_positions,
                 replace_hardness_sweep=replace_hardness,
                 weight_sensitivity=weight_sensitivity)
    parallel, skills, ds = open_study(engine, data, execution, joined(data.gold_hops))
    from cuer_agent.studies._common.pools import single_shot_data
    ds = single_shot_data(ds, cfg.questions, cfg.pool_size)
    out = run_path(out, "cuer", data.dataset)
    run_dir = open_run(out, cuer_record(source=ds.source, data=data.model_dump(mode="json"),
                                        backend=engine.model_dump(mode="json"), cuer=cfg))
    executor = Executor(skills, AgentConfig(mode="single_shot", k=cfg.k),
                        meta={"backend": engine.name, "model": skills.backend.model})
    run_cuer(ds, executor, run_dir, cfg, retriever_for=retriever_factory(ds),
             show_progress=execution.progress,
             parallel=parallel)
    summary = write_cuer_summary(run_dir, cfg)
    Console(width=max(Console().width, 120)).print(
        cuer_table(summary, title=f"CUE-R on {ds.name} (n={summary.n})"))
    for finding in summary.findings:
        typer.echo(finding)
    warn_request_errors(summary.ledger)
    typer.echo(f"→ {out}")


@app.command("propagate")
@user_errors
@option_groups
def propagate_cmd(
    ctx: typer.Context,
    out: RunOut = None,
    config: ConfigPath = None,
    data_flags: DataFlags = DATA_FLAGS,
    agent_flags: AgentFlags = AGENT_FLAGS,
    faults: Faults = None,
    hop_operators: Annotated[bool | None, typer.Option(
        help="Also REMOVE/REPLACE/DUPLICATE per hop (default: on).")] = None,
    strict: Strict = None,
    fault_persistence: FaultPersistence = None,
    redundancy: Redundancy = None,
    llm: ModelFlags = MODEL_FLAGS,
    execution: ExecutionFlags = EXECUTION_FLAGS,
) -> None:
    """Agentic fault propagation: inject a fault at hop h, let the agent re-execute."""
    from cuer_agent.config import load_config, merged
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.studies._common.run_configs import propagate_record
    from cuer_agent.studies.propagation.report import propagation_tables, run_and_summarize

    study = load_config(config)
    data, agent = study_sections(study, data_flags, agent_flags, redundancy=redundancy)
    propagation = merged(study, "propagation", faults=names(faults) if faults else None,
                         hop_operators=hop_operators, strict=strict, seed=data.seed,
                         fault_persistence=(persistence(fault_persistence)
                                            if fault_persistence else None))
    check_agent(agent.factory)
    engine = llm.engine(study)
    gold = joined(data.gold_hops)
    parallel, skills, ds = open_study(engine, data, execution, gold)
    out = run_path(out, "propagate", data.dataset, agent=agent.factory, hops=agent.hops)
    run_dir = open_run(out, propagate_record(
        source=ds.source, hops=agent.hops, retries_per_hop=agent.retries_per_hop,
        agent=agent.factory, k=agent.k,
        data={"dataset": ds.name, "path": data.path, "n": data.n,
              "hops": data.hops if is_generated(data.dataset) else None,
              "seed": data.seed, "gold_hops": gold, "redundancy": data.redundancy},
        backend=recorded(engine, skills), propagation=propagation))
    executor = Executor(skills, AgentConfig(hop_budget=agent.hops, k=agent.k,
                                            retries_per_hop=agent.retries_per_hop),
                        meta={"backend": engine.name, "model": skills.backend.model},
                        agent=agent.factory)
    summary = run_and_summarize(ds, executor, run_dir, propagation,
                                show_progress=execution.progress, parallel=parallel)
    for table in propagation_tables(summary):
        Console(width=max(Console().width, 120)).print(table)
    warn_request_errors(summary.ledger)
    typer.echo(f"→ {out}")

"""The commands that run a study and write a run directory: `run`, `cuer`, `propagate`.

Each takes --config (a TOML study config, `cuer_agent.config.StudyConfig`); the flags
given on the command line override the file, and without one the config's defaults are
the flags' defaults. `evaluate`, `replay` and `report` are in `cuer_agent.cli.evaluation`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from cuer_agent.cli._app import app, user_errors
from cuer_agent.cli._options import (
    EXECUTION_FLAGS,
    MODEL_FLAGS,
    AgentRef,
    Backend,
    ConfigPath,
    DataPath,
    ExecutionFlags,
    FaultPersistence,
    FirstN,
    ModelFlags,
    Redundancy,
    Retries,
    RunOut,
    names,
    option_groups,
)
from cuer_agent.cli._study import (
    check_agent,
    given,
    joined,
    open_run,
    open_study,
    persistence,
    recorded,
    study_sections,
    warn_request_errors,
)
from cuer_agent.errors import ConfigError, CuerError


def check_budget(hops: int, retries: int | None) -> None:
    """--hops and --retries, named as the flags are (before the config's own checks)."""
    if hops < 1:
        raise CuerError(f"--hops must be >= 1, got {hops}")
    if retries is not None and retries < 0:
        raise ConfigError(f"retries per hop must be >= 0, got {retries}")


@app.command("run")
@user_errors
@option_groups
def run_cmd(
    ctx: typer.Context,
    out: RunOut,
    config: ConfigPath = None,
    dataset: Annotated[str, typer.Option(help="synthetic (default), hotpotqa, 2wiki or "
                                         "musique.")] = "synthetic",
    path: DataPath = None,
    hops: Annotated[int, typer.Option(help="Hop budget (synthetic: also H-hop questions).")] = 3,
    mode: Annotated[str, typer.Option(help="agentic or single-shot.")] = "agentic",
    agent: AgentRef = None,
    backend: Backend = "extractive",
    llm: ModelFlags = MODEL_FLAGS,
    n: FirstN = None,
    seed: Annotated[int, typer.Option(help="Synthetic world and decoding seed.")] = 0,
    k: Annotated[int, typer.Option(help="Evidence items per retrieval.")] = 5,
    retries: Retries = None,
    execution: ExecutionFlags = EXECUTION_FLAGS,
) -> None:
    """Run the agent (or the single-shot system) and write traces.jsonl + summary.json."""
    from cuer_agent.config import load_config
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.runs import canonical_json
    from cuer_agent.studies._common.run_agent import run_dataset

    modes = {"agentic": "agentic", "single-shot": "single_shot", "single_shot": "single_shot"}
    if mode not in modes:
        raise CuerError(f"--mode must be agentic or single-shot, got {mode!r}")
    check_budget(hops, retries)
    if n is not None and n < 1:
        raise CuerError(f"--n must be >= 1, got {n}")
    study = load_config(config)
    data, section = study_sections(
        study, dataset=given(ctx, "dataset"), path=path, n=n, seed=given(ctx, "seed"),
        hops=given(ctx, "hops"), retries=retries, factory=agent, k=given(ctx, "k"))
    if section.factory is not None and modes[mode] != "agentic":
        raise CuerError("--agent runs your agent: it does not combine with --mode single-shot")
    check_agent(section.factory)
    agent_config = AgentConfig(mode=modes[mode], hop_budget=section.hops,  # type: ignore[arg-type]
                               k=section.k, retries_per_hop=section.retries_per_hop)
    engine = llm.engine(study, given(ctx, "backend"))
    parallel, skills, ds = open_study(engine, data, execution, joined(data.gold_hops))
    run_dir = open_run(out, {
        "command": "run", "dataset": ds.name, "source": ds.source, "n": data.n,
        "mode": agent_config.mode, "hop_budget": section.hops, "k": section.k,
        "seed": data.seed, "retries_per_hop": section.retries_per_hop,
        "agent": section.factory, "backend": recorded(engine, skills),
        # only a --config file sets these: without one a run records what it always did
        **({"hops": data.hops} if data.dataset == "synthetic" and data.hops != section.hops
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


@app.command("cuer")
@user_errors
@option_groups
def cuer_cmd(
    out: RunOut,
    config: ConfigPath = None,
    dataset: Annotated[str | None, typer.Option(help="hotpotqa, 2wiki, musique or "
                                                "synthetic.")] = None,
    path: DataPath = None,
    n: FirstN = None,
    backend: Annotated[str | None, typer.Option(
        help="extractive, llamacpp, ollama or openai.")] = None,
    llm: ModelFlags = MODEL_FLAGS,
    seed: Annotated[int | None, typer.Option(help="Seed (synthetic world, "
                                             "interventions).")] = None,
    hops: Annotated[int | None, typer.Option(help="Synthetic: H-hop questions.")] = None,
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
    """Single-shot CUE-R: REMOVE / REPLACE / DUPLICATE one evidence item, four axes."""
    from cuer_agent.config import load_config, merged
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.studies._common.run_agent import retriever_factory
    from cuer_agent.studies._common.run_configs import cuer_record
    from cuer_agent.studies.cuer.report import cuer_table, write_cuer_summary
    from cuer_agent.studies.cuer.runner import run_cuer

    study = load_config(config)
    data = merged(study, "data", dataset=dataset, path=str(path) if path else None, n=n,
                  hops=hops, seed=seed)
    engine = llm.engine(study, backend)
    cfg = merged(study, "cuer", seed=data.seed, two_support=two_support,
                 duplicate_positions=duplicate_positions,
                 replace_hardness_sweep=replace_hardness,
                 weight_sensitivity=weight_sensitivity)
    # [data] gold_hops is not read here: the CUE-R study runs on every example
    parallel, skills, ds = open_study(engine, data, execution, None)
    from cuer_agent.studies._common.pools import single_shot_data
    ds = single_shot_data(ds, cfg.questions, cfg.pool_size)
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
    out: RunOut,
    config: ConfigPath = None,
    dataset: Annotated[str, typer.Option(help="synthetic, musique, 2wiki or hotpotqa.")] = (
        "synthetic"),
    path: DataPath = None,
    hops: Annotated[int, typer.Option(help="Hop budget (synthetic: H-hop questions).")] = 3,
    n: FirstN = None,
    faults: Annotated[str | None, typer.Option(help="Comma-separated fault names "
                                               "(default: all).")] = None,
    hop_operators: Annotated[bool, typer.Option(help="Also REMOVE/REPLACE/DUPLICATE per "
                                                "hop.")] = True,
    strict: Annotated[bool, typer.Option(help="Inject only where the clean answer was "
                                         "correct.")] = True,
    fault_persistence: FaultPersistence = None,
    redundancy: Redundancy = None,
    retries: Retries = None,
    gold_hops: Annotated[str | None, typer.Option(help="Keep only examples with these gold "
                                                  "hop counts, e.g. 3,4.")] = None,
    agent_ref: AgentRef = None,
    backend: Backend = "extractive",
    llm: ModelFlags = MODEL_FLAGS,
    seed: Annotated[int, typer.Option(help="Seed (synthetic world, faults).")] = 0,
    execution: ExecutionFlags = EXECUTION_FLAGS,
) -> None:
    """Agentic fault propagation: inject a fault at hop h, let the agent re-execute."""
    from cuer_agent.config import load_config, merged
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.studies._common.run_configs import propagate_record
    from cuer_agent.studies.propagation.report import propagation_tables, run_and_summarize

    check_budget(hops, retries)
    study = load_config(config)
    data, agent = study_sections(
        study, dataset=given(ctx, "dataset"), path=path, n=n, seed=given(ctx, "seed"),
        hops=given(ctx, "hops"), retries=retries, factory=agent_ref, redundancy=redundancy)
    propagation = merged(study, "propagation", faults=names(faults) if faults else None,
                         hop_operators=given(ctx, "hop_operators"),
                         strict=given(ctx, "strict"), seed=data.seed,
                         fault_persistence=(persistence(fault_persistence)
                                            if fault_persistence else None))
    check_agent(agent.factory)
    engine = llm.engine(study, given(ctx, "backend"))
    gold = gold_hops if gold_hops is not None else joined(data.gold_hops)
    parallel, skills, ds = open_study(engine, data, execution, gold)
    run_dir = open_run(out, propagate_record(
        source=ds.source, hops=agent.hops, retries_per_hop=agent.retries_per_hop,
        agent=agent.factory, k=agent.k,
        data={"dataset": ds.name, "path": data.path, "n": data.n,
              "hops": data.hops if data.dataset == "synthetic" else None,
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

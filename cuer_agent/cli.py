"""The `cuer-agent` command line (typer).

Every command turns a `CuerError` (bad input, unknown name, bad option) into one line on
stderr and exit code 2, before or without losing any work already written.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from cuer_agent.data._select import hop_questions, load_study_data
from cuer_agent.errors import CuerError
from cuer_agent.parallel import Parallelism, default_concurrency

app = typer.Typer(
    name="cuer-agent",
    help="Which evidence mattered, and where a failure started.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="Inspect data sets.", no_args_is_help=True)
app.add_typer(data_app, name="data")

F = TypeVar("F", bound=Callable[..., Any])
err_console = Console(stderr=True)


def user_errors(func: F) -> F:
    """Report `CuerError` as one line and exit 2 (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CuerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


def _print_json(obj: object) -> None:
    typer.echo(json.dumps(obj, sort_keys=True, ensure_ascii=False))


@data_app.command("stats")
@user_errors
def data_stats(
    dataset: Annotated[str, typer.Option(help="hotpotqa, 2wiki, musique or synthetic.")],
    path: Annotated[Path | None, typer.Option(help="Data file (original format).")] = None,
    hops: Annotated[int | None, typer.Option(help="Synthetic: only H-hop questions.")] = None,
    n: Annotated[int | None, typer.Option(help="Use the first N examples.")] = None,
    seed: Annotated[int, typer.Option(help="Synthetic world seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Example and passage counts, hop histogram, question types, support recall@5."""
    from cuer_agent.data import load_dataset
    from cuer_agent.experiments.data_stats import dataset_stats

    if n is not None and n < 1:
        raise CuerError(f"--n must be >= 1, got {n}")
    kwargs: dict[str, Any] = {}
    if dataset == "synthetic":
        kwargs = {"hops": hops, "seed": seed}
    elif hops is not None:
        raise CuerError("--hops applies to --dataset synthetic only")
    ds = load_dataset(dataset, path, n=n, **kwargs)
    stats = dataset_stats(ds)
    if as_json:
        _print_json(stats)
        return
    table = Table(title=f"{stats['dataset']} ({stats['source']})", show_header=False)
    for key in ("examples", "passages"):
        table.add_row(key, str(stats[key]))
    table.add_row("hops", ", ".join(f"{h}: {c}" for h, c in stats["hops"].items()))
    table.add_row("question types",
                  ", ".join(f"{t}: {c}" for t, c in stats["question_types"].items()))
    if "support_recall_at_5" in stats:
        table.add_row("support recall@5 by hop",
                      ", ".join(f"{h}: {r:.2f}" for h, r in stats["support_recall_at_5"].items()))
    Console().print(table)


Backend = Annotated[str, typer.Option(help="extractive (offline, default), llamacpp (a GGUF "
                                      "model in process), ollama or openai.")]
Model = Annotated[str | None, typer.Option(help="Model name for ollama/openai; llamacpp: a "
                                           ".gguf file or smollm2-135m.")]
Timeout = Annotated[float | None, typer.Option(
    help="Seconds one model request may take (default 120).")]
Threads = Annotated[int | None, typer.Option(help="llamacpp: CPU threads (default: up to 4).")]
Omit = Annotated[str | None, typer.Option(
    help="Decoding parameters not to send, for a server that rejects them: comma-separated "
         "from temperature, seed, max_tokens, think.")]
BaseUrl = Annotated[str | None, typer.Option(help="Server URL (ollama host, or an "
                                             "OpenAI-compatible base URL).")]
Concurrency = Annotated[int | None, typer.Option(
    help="Model requests in flight at once — examples and the independent forks of each "
         "(default per backend: extractive 1, ollama 4, openai 16). Results are identical "
         "at any value.")]
ExecutorName = Annotated[str, typer.Option(
    "--executor", help="Where examples run: thread (default), process (local processes, for "
                       "CPU-bound work such as the extractive reader) or ray (a Ray cluster; "
                       "pip install 'cuer-agent[ray]'). Results are identical.")]
Workers = Annotated[int | None, typer.Option(
    help="Processes or Ray actors for --executor process|ray (default: the CPU count; Ray: "
         "the cluster's). Each runs concurrency/workers examples at once.")]
RayAddress = Annotated[str | None, typer.Option(
    help="Ray cluster to attach to, e.g. auto or ray://head:10001 (default: start a local "
         "Ray).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not use the response cache.")]
AgentRef = Annotated[str | None, typer.Option(
    "--agent", help="Your LangGraph agent: module:factory or path/file.py:factory, the "
                    "factory returning (graph, AgentSpec). Default: cuer-agent's own.")]
Retries = Annotated[int | None, typer.Option(
    "--retries", help="Retries per hop when VERIFY finds a hop unsupported (default 1; "
                      "0 = the agent never retries).")]
FaultPersistence = Annotated[str | None, typer.Option(
    "--fault-persistence", help="How long a fault holds: query (default: whenever its "
                                "sub-query is asked again), hop (every retrieval at the hop; "
                                "unrecoverable by design) or once (a one-shot state edit).")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]
CachePath = Annotated[Path | None, typer.Option(
    help="Response cache (SQLite). Default: $CUER_CACHE or ~/.cache/cuer-agent/responses.sqlite")]


def _engine(study: Any, backend: str | None, model: str | None, base_url: str | None,
            timeout: float | None, threads: int | None, omit: str | None) -> Any:
    """The study's [backend] section with the backend flags given applied (a command
    without --config passes the defaults, `StudyConfig()`)."""
    from cuer_agent.config import merged

    return merged(study, "backend", name=backend, model=model, base_url=base_url,
                  timeout=timeout, threads=threads, omit=_names(omit) if omit else None)


def _names(value: str) -> tuple[str, ...]:
    """A comma-separated option's names."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _skill_client(engine: Any, seed: int, cache: Path | None, no_cache: bool) -> Any:
    """Backend + cache + ledger from a [backend] section; checks the server (or loads the
    model) before any work starts."""
    import os

    from cuer_agent.llm.backends import SkillClient, make_backend
    from cuer_agent.llm.cache import ResponseCache

    client_backend = make_backend(engine.name, **engine.client_options(seed))
    client_backend.check()  # type: ignore[attr-defined]
    if no_cache:
        return SkillClient(client_backend)
    path = cache or Path(os.environ.get("CUER_CACHE",
                                        Path.home() / ".cache" / "cuer-agent" / "responses.sqlite"))
    return SkillClient(client_backend, cache=ResponseCache(path))


def _recorded(engine: Any, skills: Any) -> dict[str, Any]:
    """The [backend] section as a run records it (timeout excluded), with the model the
    backend resolved (a default model name, where none was given)."""
    return {**engine.model_dump(mode="json"), "model": skills.backend.model}


def _replayed_engine(run_dir: Path, recorded: dict[str, Any], timeout: float | None) -> Any:
    """The [backend] section a run recorded, so a replay asks the model the same way."""
    from cuer_agent.config import validate_config

    engine = validate_config({"backend": recorded}, run_dir / "config.json").backend
    return engine if timeout is None else engine.model_copy(update={"timeout": timeout})


def _persistence(value: str | None) -> str:
    """--fault-persistence, checked before any work."""
    from cuer_agent.interventions.persistence import PERSISTENCES

    if value is None:
        return "query"
    if value not in PERSISTENCES:
        raise CuerError(f"--fault-persistence must be one of {', '.join(PERSISTENCES)}, "
                        f"got {value!r}")
    return value


def _check_agent(ref: str | None) -> None:
    """--agent: the factory is imported, called and its spec checked against its graph
    before any work (a mismatch is one line, exit 2)."""
    if ref is not None:
        from cuer_agent.agents import load_agent
        load_agent(ref)


def _parallelism(backend: str, concurrency: int | None, executor: str, workers: int | None,
                 ray_address: str | None) -> Parallelism:
    """The --executor/--concurrency/--workers/--ray-address policy; bad values fail here,
    before any work."""
    if concurrency is None:
        concurrency = default_concurrency(backend)
    return Parallelism(executor=executor, concurrency=concurrency, workers=workers,
                       ray_address=ray_address)


@app.command("run")
@user_errors
def run_cmd(
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")],
    dataset: Annotated[str, typer.Option(help="synthetic (default), hotpotqa, 2wiki or "
                                         "musique.")] = "synthetic",
    path: Annotated[Path | None, typer.Option(help="Data file (original format).")] = None,
    hops: Annotated[int, typer.Option(help="Hop budget (synthetic: also H-hop questions).")] = 3,
    mode: Annotated[str, typer.Option(help="agentic or single-shot.")] = "agentic",
    agent: AgentRef = None,
    backend: Backend = "extractive",
    model: Model = None,
    base_url: BaseUrl = None,
    timeout: Timeout = None,
    threads: Threads = None,
    omit: Omit = None,
    n: Annotated[int | None, typer.Option(help="First N examples.")] = None,
    seed: Annotated[int, typer.Option(help="Synthetic world and decoding seed.")] = 0,
    k: Annotated[int, typer.Option(help="Evidence items per retrieval.")] = 5,
    retries: Retries = None,
    cache: CachePath = None,
    no_cache: NoCache = False,
    progress: ShowProgress = True,
    concurrency: Concurrency = None,
    executor_name: ExecutorName = "thread",
    workers: Workers = None,
    ray_address: RayAddress = None,
) -> None:
    """Run the agent (or the single-shot system) and write traces.jsonl + summary.json."""
    from cuer_agent.config import StudyConfig
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.experiments.run_agent import run_dataset
    from cuer_agent.runs import RunDir, canonical_json

    modes = {"agentic": "agentic", "single-shot": "single_shot", "single_shot": "single_shot"}
    if mode not in modes:
        raise CuerError(f"--mode must be agentic or single-shot, got {mode!r}")
    if hops < 1:
        raise CuerError(f"--hops must be >= 1, got {hops}")
    if n is not None and n < 1:
        raise CuerError(f"--n must be >= 1, got {n}")
    if agent is not None and modes[mode] != "agentic":
        raise CuerError("--agent runs your agent: it does not combine with --mode single-shot")
    _check_agent(agent)
    config = AgentConfig(mode=modes[mode], hop_budget=hops, k=k,  # type: ignore[arg-type]
                         retries_per_hop=1 if retries is None else retries)
    engine = _engine(StudyConfig(), backend, model, base_url, timeout, threads, omit)
    parallel = _parallelism(backend, concurrency, executor_name, workers, ray_address)
    skills = _skill_client(engine, seed, cache, no_cache)
    ds = load_study_data(dataset, path, n, hops, seed)
    run_config = {"command": "run", "dataset": ds.name, "source": ds.source, "n": n,
                  "mode": config.mode, "hop_budget": hops, "k": k, "seed": seed,
                  "retries_per_hop": config.retries_per_hop, "agent": agent,
                  "backend": _recorded(engine, skills)}
    run_dir = RunDir(out)
    run_dir.open(run_config)
    executor = Executor(skills, config, meta={"backend": backend,
                                              "model": skills.backend.model}, agent=agent)
    summary = run_dataset(ds, executor, run_dir, show_progress=progress,
                          parallel=parallel)
    invocation = skills.ledger.to_dict()
    (out / "ledger.json").write_text(canonical_json(invocation, indent=2) + "\n")
    acc = summary["accuracy"]
    typer.echo(f"{summary['n']} examples  soft {acc['soft']:.3f}  em {acc['em']:.3f}  "
               f"f1 {acc['f1']:.3f}  hops used {summary['hops_used']}")
    typer.echo(f"skill requests {summary['ledger']['requests']} (distinct "
               f"{summary['ledger']['calls']}); this invocation: backend calls "
               f"{invocation['calls']}, cache hits {invocation['cache_hits']}, parse "
               f"failures {invocation['parse_failures']}  → {out}")


@app.command("cuer")
@user_errors
def cuer_cmd(
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")],
    config: Annotated[Path | None, typer.Option(help="Study config (TOML); flags override "
                                                "it.")] = None,
    dataset: Annotated[str | None, typer.Option(help="hotpotqa, 2wiki, musique or "
                                                "synthetic.")] = None,
    path: Annotated[Path | None, typer.Option(help="Data file (original format).")] = None,
    n: Annotated[int | None, typer.Option(help="First N examples.")] = None,
    backend: Annotated[str | None, typer.Option(help="extractive, llamacpp, ollama or "
                                                "openai.")] = None,
    model: Model = None,
    base_url: BaseUrl = None,
    timeout: Timeout = None,
    threads: Threads = None,
    omit: Omit = None,
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
    cache: CachePath = None,
    no_cache: NoCache = False,
    progress: ShowProgress = True,
    concurrency: Concurrency = None,
    executor_name: ExecutorName = "thread",
    workers: Workers = None,
    ray_address: RayAddress = None,
) -> None:
    """Single-shot CUE-R: REMOVE / REPLACE / DUPLICATE one evidence item, four axes."""
    from cuer_agent.config import load_config, merged
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.experiments.cuer import run_cuer
    from cuer_agent.experiments.cuer_report import cuer_table, write_cuer_summary
    from cuer_agent.experiments.run_agent import retriever_factory
    from cuer_agent.runs import RunDir

    study = load_config(config)
    data = merged(study, "data", dataset=dataset, path=str(path) if path else None, n=n,
                  hops=hops, seed=seed)
    engine = _engine(study, backend, model, base_url, timeout, threads, omit)
    cfg = merged(study, "cuer", seed=data.seed, two_support=two_support,
                 duplicate_positions=duplicate_positions,
                 replace_hardness_sweep=replace_hardness,
                 weight_sensitivity=weight_sensitivity)
    parallel = _parallelism(engine.name, concurrency, executor_name, workers, ray_address)
    skills = _skill_client(engine, data.seed, cache, no_cache)
    ds = load_study_data(data.dataset, data.path, data.n, data.hops, data.seed)
    if cfg.asks_per_hop(ds.name):
        ds = hop_questions(ds)
    run_dir = RunDir(out)
    run_dir.open({"command": "cuer", "data": data.model_dump(mode="json"),
                  "backend": engine.model_dump(mode="json"), "source": ds.source,
                  "cuer": cfg.model_dump(mode="json")})
    executor = Executor(skills, AgentConfig(mode="single_shot", k=cfg.k),
                        meta={"backend": engine.name, "model": skills.backend.model})
    run_cuer(ds, executor, run_dir, cfg, retriever_for=retriever_factory(ds),
             show_progress=progress,
             parallel=parallel)
    summary = write_cuer_summary(run_dir, cfg)
    Console(width=max(Console().width, 120)).print(
        cuer_table(summary, title=f"CUE-R on {ds.name} (n={summary['n']})"))
    for finding in summary["findings"]:
        typer.echo(finding)
    typer.echo(f"→ {out}")


@app.command("propagate")
@user_errors
def propagate_cmd(
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")],
    dataset: Annotated[str, typer.Option(help="synthetic, musique, 2wiki or hotpotqa.")] = (
        "synthetic"),
    path: Annotated[Path | None, typer.Option(help="Data file (original format).")] = None,
    hops: Annotated[int, typer.Option(help="Hop budget (synthetic: H-hop questions).")] = 3,
    n: Annotated[int | None, typer.Option(help="First N examples.")] = None,
    faults: Annotated[str | None, typer.Option(help="Comma-separated fault names "
                                               "(default: all).")] = None,
    hop_operators: Annotated[bool, typer.Option(help="Also REMOVE/REPLACE/DUPLICATE per "
                                                "hop.")] = True,
    strict: Annotated[bool, typer.Option(help="Inject only where the clean answer was "
                                         "correct.")] = True,
    fault_persistence: FaultPersistence = None,
    retries: Retries = None,
    gold_hops: Annotated[str | None, typer.Option(help="Keep only examples with these gold "
                                                  "hop counts, e.g. 3,4.")] = None,
    agent_ref: AgentRef = None,
    backend: Backend = "extractive",
    model: Model = None,
    base_url: BaseUrl = None,
    timeout: Timeout = None,
    threads: Threads = None,
    omit: Omit = None,
    seed: Annotated[int, typer.Option(help="Seed (synthetic world, faults).")] = 0,
    cache: CachePath = None,
    no_cache: NoCache = False,
    progress: ShowProgress = True,
    concurrency: Concurrency = None,
    executor_name: ExecutorName = "thread",
    workers: Workers = None,
    ray_address: RayAddress = None,
) -> None:
    """Agentic fault propagation: inject a fault at hop h, let the agent re-execute."""
    from cuer_agent.config import StudyConfig
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.experiments.propagation import DEFAULT_FAULTS, PropagationConfig
    from cuer_agent.experiments.propagation_report import propagation_tables, run_and_summarize
    from cuer_agent.interventions._fault_types import get_fault
    from cuer_agent.runs import RunDir

    chosen = _names(faults) if faults else DEFAULT_FAULTS
    for name in chosen:
        get_fault(name)  # unknown name → one error line, before any work
    if hops < 1:
        raise CuerError(f"--hops must be >= 1, got {hops}")
    _check_agent(agent_ref)
    config = PropagationConfig(faults=chosen, hop_operators=hop_operators, strict=strict,
                               seed=seed, fault_persistence=_persistence(fault_persistence))
    agent = AgentConfig(hop_budget=hops, retries_per_hop=1 if retries is None else retries)
    engine = _engine(StudyConfig(), backend, model, base_url, timeout, threads, omit)
    parallel = _parallelism(backend, concurrency, executor_name, workers, ray_address)
    skills = _skill_client(engine, seed, cache, no_cache)
    ds = load_study_data(dataset, path, n, hops, seed, gold_hops)
    run_dir = RunDir(out)
    run_dir.open({"command": "propagate", "source": ds.source, "hop_budget": hops,
                  "retries_per_hop": agent.retries_per_hop, "agent": agent_ref,
                  "data": {"dataset": ds.name, "path": str(path) if path else None, "n": n,
                           "hops": hops if dataset == "synthetic" else None, "seed": seed,
                           "gold_hops": gold_hops},
                  "backend": _recorded(engine, skills),
                  "propagation": config.model_dump(mode="json")})
    executor = Executor(skills, agent, meta={"backend": backend, "model": skills.backend.model},
                        agent=agent_ref)
    summary = run_and_summarize(ds, executor, run_dir, config, show_progress=progress,
                                parallel=parallel)
    for table in propagation_tables(summary):
        Console(width=max(Console().width, 120)).print(table)
    typer.echo(f"→ {out}")


@app.command("replay")
@user_errors
def replay_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A cuer or propagate run directory.")],
    record: Annotated[str, typer.Option(help="Record id, e.g. syn-0-3/query_drift@2.")],
    agent: Annotated[str | None, typer.Option(
        "--agent", help="The run's agent, if its recorded --agent reference moved "
                        "(default: the one in config.json).")] = None,
    timeout: Timeout = None,
    cache: CachePath = None,
    no_cache: NoCache = False,
) -> None:
    """Re-execute one stored record and check that the same trace comes out (exit 1 if not)."""
    from cuer_agent.experiments.replay import replay
    from cuer_agent.runs import read_config

    run_config = read_config(run_dir)  # missing or corrupted → one line, exit 2
    engine = run_config.get("backend")
    if run_config.get("command") not in ("cuer", "propagate") or not isinstance(engine, dict):
        raise CuerError(f"{run_dir / 'config.json'}: replay supports cuer and propagate run "
                        f"directories (an evaluate run holds one of each: DIR/single_shot, "
                        f"DIR/agentic), not {run_config.get('command', 'this')!r} runs")
    skills = _skill_client(_replayed_engine(run_dir, engine, timeout),
                           int(run_config.get("data", {}).get("seed", 0)), cache, no_cache)
    _check_agent(agent)
    result = replay(run_dir, record, skills, agent)
    if result.identical:
        typer.echo(f"{record}: replayed trace is identical ({len(result.stored)} bytes)")
        return
    typer.echo(f"{record}: replayed trace DIFFERS from the stored one", err=True)
    raise typer.Exit(code=1)


EXECUTION_OPTIONS = frozenset({"out", "cache", "no_cache", "progress", "concurrency",
                               "executor_name", "workers", "ray_address", "timeout"})
"""Options that leave a study's results byte-identical: not part of its provenance."""


def _command(ctx: typer.Context) -> str:
    """The command as given, with only the options that can change its results."""
    import shlex

    words = ["cuer-agent", ctx.info_name or ""]
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name or "")
        # by name: typer carries its own copy of click, with its own ParameterSource enum
        if (param.name in EXECUTION_OPTIONS or not param.opts or source is None
                or source.name != "COMMANDLINE"):
            continue
        value = ctx.params[param.name or ""]
        if isinstance(value, bool):
            words.append(param.opts[0] if value or not param.secondary_opts
                         else param.secondary_opts[0])
        else:
            words += [param.opts[0], str(value)]
    return shlex.join(words)


@app.command("evaluate")
@user_errors
def evaluate_cmd(
    ctx: typer.Context,
    hops: Annotated[int | None, typer.Option(help="Agent hop budget (synthetic: H-hop "
                                             "questions). Default 3.")] = None,
    config: Annotated[Path | None, typer.Option(help="Study config (TOML); flags override "
                                                "it.")] = None,
    dataset: Annotated[str | None, typer.Option(help="synthetic (default), hotpotqa, 2wiki, "
                                                "musique.")] = None,
    path: Annotated[Path | None, typer.Option(help="Data file (original format).")] = None,
    n: Annotated[int | None, typer.Option(help="Examples (default 100).")] = None,
    backend: Annotated[str | None, typer.Option(help="extractive (default), llamacpp, ollama, "
                                                "openai.")] = None,
    model: Model = None,
    base_url: BaseUrl = None,
    timeout: Timeout = None,
    threads: Threads = None,
    omit: Omit = None,
    strict: Annotated[bool | None, typer.Option(
        help="Inject faults only where the clean answer was correct (default: strict). "
             "--no-strict for a weak model that is rarely right.")] = None,
    faults: Annotated[str | None, typer.Option(help="Comma-separated faults (default all).")] = (
        None),
    diagnosers: Annotated[str | None, typer.Option(help="Comma-separated diagnosers "
                                                   "(default all).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (synthetic world, faults).")] = None,
    retries: Retries = None,
    fault_persistence: FaultPersistence = None,
    agent_ref: AgentRef = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default "
                                             "runs/evaluate-<dataset>-h<hops>).")] = None,
    cache: CachePath = None,
    no_cache: NoCache = False,
    progress: ShowProgress = True,
    concurrency: Concurrency = None,
    executor_name: ExecutorName = "thread",
    workers: Workers = None,
    ray_address: RayAddress = None,
) -> None:
    """CUE-R baseline + agentic fault propagation + diagnoser comparison, with a report."""
    from cuer_agent.config import load_config, merged
    from cuer_agent.diagnosers import get_diagnoser
    from cuer_agent.experiments.evaluate import run_evaluate
    from cuer_agent.experiments.evaluate_report import print_headline
    from cuer_agent.interventions._fault_types import get_fault
    from cuer_agent.runs import RunDir

    study = load_config(config)
    data = merged(study, "data", dataset=dataset, path=str(path) if path else None, n=n,
                  seed=seed)
    if data.n is None:
        data = data.model_copy(update={"n": 100})
    agent = merged(study, "agent", hops=hops, retries_per_hop=retries, factory=agent_ref)
    _check_agent(agent.factory)
    if data.dataset == "synthetic":
        data = data.model_copy(update={"hops": data.hops or agent.hops})
    fault_names = _names(faults) if faults else None
    names = _names(diagnosers) if diagnosers else None
    study = study.model_copy(update={
        "data": data, "agent": agent,
        "backend": _engine(study, backend, model, base_url, timeout, threads, omit),
        "propagation": merged(study, "propagation", faults=fault_names, seed=data.seed,
                              strict=strict,
                              fault_persistence=(_persistence(fault_persistence)
                                                 if fault_persistence else None)),
        "diagnose": merged(study, "diagnose", names=names),
        "cuer": merged(study, "cuer", seed=data.seed)})
    for name in study.propagation.faults:
        get_fault(name)
    for name in study.diagnose.names:
        get_diagnoser(name)
    engine = study.backend
    parallel = _parallelism(engine.name, concurrency, executor_name, workers, ray_address)
    skills = _skill_client(engine, data.seed, cache, no_cache)
    gold_hops = ",".join(map(str, data.gold_hops)) if data.gold_hops else None
    ds = load_study_data(data.dataset, data.path, data.n, data.hops, data.seed, gold_hops)
    run_dir = RunDir(out or Path("runs") / f"evaluate-{data.dataset}-h{agent.hops}")
    run_dir.open({"command": "evaluate", "source": ds.source,
                  "study": study.model_dump(mode="json")})
    from cuer_agent.provenance import provenance

    summary = run_evaluate(ds, skills, run_dir, study, show_progress=progress,
                           parallel=parallel,
                           provenance=provenance(_command(ctx), data.path))
    print_headline(summary, run_dir.path, skills.ledger.to_dict())


@app.command("report")
@user_errors
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="An evaluate run directory.")],
) -> None:
    """Rebuild report.md and report.html from a run directory's summary.json."""
    from cuer_agent.report import write_report

    if not (run_dir / "summary.json").exists():
        raise CuerError(f"{run_dir / 'summary.json'}: no such file (not a finished run)")
    md, html = write_report(run_dir)
    typer.echo(f"→ {md}\n→ {html}")


@app.command("score")
@user_errors
def score_cmd(
    dataset: Annotated[str, typer.Option(help="hotpotqa, 2wiki or musique.")],
    gold: Annotated[Path, typer.Option(help="Gold file in the dataset's original format.")],
    pred: Annotated[Path, typer.Option(help='Predictions: {"answer": {id: answer}} '
                                       "(MuSiQue also: JSONL of {id, predicted_answer}).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Score any system's predictions exactly as the official evaluators do (+ soft)."""
    from cuer_agent.metrics.official import score_predictions

    scores = score_predictions(dataset, gold, pred)
    if as_json:
        _print_json(scores)
        return
    typer.echo(f"n {scores['n']}  em {scores['em']:.4f}  f1 {scores['f1']:.4f}  "
               f"soft {scores['soft']:.4f}  missing {scores['missing']}")


@app.command("export")
@user_errors
def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (evaluate, propagate, "
                                            "cuer or run).")],
    fmt: Annotated[str, typer.Option("--format", help="openinference (OTLP/JSON lines).")] = (
        "openinference"),
    out: Annotated[Path | None, typer.Option(help="Output file (default "
                                             "<run_dir>/openinference.jsonl).")] = None,
    endpoint: Annotated[str | None, typer.Option(
        help="Also POST the spans to this OTLP/HTTP collector (…/v1/traces is added unless "
             "given), e.g. http://127.0.0.1:4318 or a Langfuse …/api/public/otel.")] = None,
    protobuf: Annotated[bool, typer.Option(
        "--protobuf", help="POST application/x-protobuf instead of JSON (Phoenix); needs "
                           "opentelemetry-proto.")] = False,
) -> None:
    """Write every trace of a run as OpenInference spans (and optionally send them)."""
    from cuer_agent.interchange import export_run, run_requests, send

    if fmt != "openinference":
        raise CuerError(f"--format must be openinference, got {fmt!r}")
    path = out or run_dir / "openinference.jsonl"
    n = export_run(run_dir, path)
    typer.echo(f"{n} traces → {path}")
    if endpoint:
        sent = send(run_requests(run_dir), endpoint, protobuf=protobuf)
        typer.echo(f"{sent} traces → {endpoint}")


@app.command("diagnose")
@user_errors
def diagnose_cmd(
    traces: Annotated[Path, typer.Option(help="Traces file: OpenInference spans (OTLP/JSON "
                                         "lines, hex or base64 ids) or cuer traces JSONL.")],
    out: Annotated[Path, typer.Option(help="Output directory.")],
    fmt: Annotated[str, typer.Option("--format", help="openinference (default) or cuer.")] = (
        "openinference"),
    diagnosers: Annotated[str | None, typer.Option(
        help="Comma-separated diagnosers (default: every trace-only one). Gold-reading ones "
             "need --gold; probing ones need an agent and are refused.")] = None,
    gold: Annotated[Path | None, typer.Option(help="Gold file in the dataset's original "
                                              "format (matched by example id, then "
                                              "question).")] = None,
    dataset: Annotated[str | None, typer.Option(help="The gold file's dataset: hotpotqa, "
                                                "2wiki or musique.")] = None,
    retrieval_tools: Annotated[str | None, typer.Option(
        help="Comma-separated names of TOOL spans that are searches (a ReAct agent's search "
             "tool): each call is a hop, its output text the evidence.")] = None,
    backend: Annotated[str | None, typer.Option(help="Backend of llm-judge: extractive "
                                                "(default), llamacpp, ollama, openai.")] = None,
    model: Model = None,
    base_url: BaseUrl = None,
    timeout: Timeout = None,
    threads: Threads = None,
    omit: Omit = None,
    seed: Annotated[int, typer.Option(help="Seed of seeded diagnosers (chance).")] = 0,
    cache: CachePath = None,
    no_cache: NoCache = False,
) -> None:
    """Diagnose traces from any agent: trace-only diagnosers, gold ones with --gold."""
    from cuer_agent.config import StudyConfig
    from cuer_agent.data import load_dataset
    from cuer_agent.diagnosers import get_diagnoser
    from cuer_agent.experiments.diagnose_traces import (
        check_diagnosers,
        run_diagnose_traces,
        trace_only_diagnosers,
    )

    if (gold is None) != (dataset is None):
        raise CuerError("--gold and --dataset go together")
    study = StudyConfig()
    study = study.model_copy(update={
        "backend": _engine(study, backend, model, base_url, timeout, threads, omit),
        "diagnose": study.diagnose.model_copy(update={"seed": seed})})
    names = _names(diagnosers) if diagnosers else tuple(trace_only_diagnosers())
    # Before the model or the data loads: unknown, probing, or gold without --gold.
    check_diagnosers([get_diagnoser(name) for name in names], has_gold=gold is not None)
    skills = _skill_client(study.backend, seed, cache, no_cache)
    made = [get_diagnoser(name, skills=skills) for name in names]
    examples = list(load_dataset(dataset, gold).examples) if gold and dataset else None
    summary = run_diagnose_traces(traces, fmt, made, out, study, skills, examples=examples,
                                  gold=str(gold) if gold else None,
                                  retrieval_tools=_names(retrieval_tools or ""))
    typer.echo(f"{summary['mapped']}/{summary['traces']} traces mapped, "
               f"{summary['unmapped_spans']['n']} spans left out; "
               f"{len(made)} diagnosers → {out}")


trace_app = typer.Typer(help="Inspect traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
@user_errors
def trace_show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    example: Annotated[str, typer.Option(help="Example id.")],
) -> None:
    """Render one trace as a tree."""
    from rich.tree import Tree

    from cuer_agent.runs import read_rows
    from cuer_agent.trace import Trace

    path = run_dir / "traces.jsonl"
    if not path.exists():
        raise CuerError(f"{path}: no such file")
    for row in read_rows(path):
        trace = Trace.model_validate(row["trace"])
        if trace.example_id == example:
            break
    else:
        raise CuerError(f"{path}: no trace for example {example!r}")
    root = Tree(f"[bold]{trace.question}[/]  ({trace.mode}, status {trace.status})")
    for hop in trace.hops:
        node = root.add(f"hop {hop.hop}" + (f" ({len(hop.attempts) + 1} attempts)"
                                           if hop.attempts else ""))
        for attempt in (*hop.attempts, hop):
            _render_attempt(node if not hop.attempts else
                            node.add(f"attempt {attempt.attempt}"), attempt)
    root.add(f"answer: [bold green]{trace.answer or '—'}[/]  confidence: {trace.confidence}  "
             f"used: {', '.join(trace.used_ids) or '—'}")
    root.add(f"cost: {trace.cost.llm_calls} skill calls, "
             f"{trace.cost.prompt_tokens + trace.cost.completion_tokens} tokens")
    Console().print(root)


def _render_attempt(node: Any, attempt: Any) -> None:
    """One attempt of a hop: its sub-query, evidence (✓ = selected), finding, support."""
    node.add(f"sub-query: [cyan]{attempt.subquery}[/]")
    for ev in attempt.retrieved:
        mark = "[green]✓[/]" if ev.id in attempt.selected else " "
        node.add(f"{mark} {ev.rank}. {ev.title} [dim]({ev.id}, {ev.score:.2f})[/]")
    node.add(f"finding: [magenta]{attempt.finding or '—'}[/]  support: {attempt.support}  "
             f"confidence: {attempt.confidence}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()

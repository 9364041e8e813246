"""Opening a study from the command line, for every study command.

The [data] and [agent] sections its flags and --config give (`study_sections`); the
executor policy, the backend client and the examples (`open_study`), in that order so
that bad values fail before any work; the run directory (`open_run`); the checks of
--fault-persistence and --agent; a replay's backend; and the command line a run
records as its provenance (`command_line`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from cuer_agent._json import JsonRow
from cuer_agent.cli._options import AgentFlags, DataFlags, ExecutionFlags
from cuer_agent.data._example import Dataset
from cuer_agent.data._select import load_study_data
from cuer_agent.errors import CuerError
from cuer_agent.parallel import Parallelism

if TYPE_CHECKING:  # the studies load when a command runs, not when the CLI starts
    from cuer_agent.studies._common.cells import Ledger


def on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option `name` was given on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    # by name: typer carries its own copy of click, with its own ParameterSource enum
    return source is not None and source.name == "COMMANDLINE"


def study_sections(study: Any, data: DataFlags, agent: AgentFlags, *, k: int | None = None,
                   redundancy: str | None = None) -> tuple[Any, Any]:
    """The [data] and [agent] sections with the flags given applied; the synthetic
    world's questions follow the agent's hop budget unless --gold-hops or [data] says
    otherwise (`DataFlags.section`)."""
    section = agent.section(study, k=k)
    return data.section(study, budget=section.hops,
                        redundancy=redundancy_flag(redundancy)), section


def joined(gold_hops: tuple[int, ...] | None) -> str | None:
    """[data] gold_hops as --gold-hops spells it ("3,4")."""
    return ",".join(map(str, gold_hops)) if gold_hops else None


class OpenedStudy(NamedTuple):
    parallel: Parallelism
    skills: Any
    dataset: Dataset


def open_study(engine: Any, data: Any, flags: ExecutionFlags,
               gold_hops: str | None) -> OpenedStudy:
    """The executor policy, the backend client (its server checked, or its model loaded)
    and the examples of [data], narrowed to `gold_hops` ("3,4") if given."""
    parallel = flags.parallelism(engine.name)
    skills = skill_client(engine, data.seed, flags.cache, flags.no_cache)
    ds = load_study_data(data.dataset, data.path, data.n, data.hops, data.seed, gold_hops,
                          data.redundancy)
    return OpenedStudy(parallel, skills, ds)


def warn_request_errors(ledger: Ledger) -> None:
    """Say (on stderr) how many traces a failed request cut short (a study's `ledger`),
    and how to repair them: the scores above count them as they are, and only the
    warning tells a server outage from a weak agent."""
    errors = ledger.errors
    if errors:
        typer.echo(f"warning: {errors} trace(s) stopped early: a request to the model server "
                   "failed after every retry (their `error` in traces.jsonl says why). Run "
                   "the same command again, once the server answers, to redo their examples.",
                   err=True)


def print_skill_table(invocation: JsonRow, backend: str) -> None:
    """How the model did in this invocation, per skill: calls, parse failures, replies cut
    at their output-token bound and how many of those were repaired, mean output tokens;
    and a warning when more than `PARSE_FAILURE_FLAG` of the replies failed to parse.
    Nothing for a rule-based backend (it writes no tokens)."""
    from rich.console import Console
    from rich.table import Table

    from cuer_agent.llm.backends import backend_about
    from cuer_agent.llm.cache import PARSE_FAILURE_FLAG

    skills = invocation.get("by_skill")
    if backend_about(backend).rule_based or not isinstance(skills, dict) or not skills:
        return
    table = Table(title="How the model did, per skill (this invocation)")
    for col in ("skill", "calls", "cached", "parse failures", "cut at bound", "repaired",
                "mean output tokens"):
        table.add_column(col, justify="left" if col == "skill" else "right")
    for name, c in sorted(skills.items()):
        calls = int(c["calls"])
        table.add_row(name, str(calls), str(c["cache_hits"]), str(c["parse_failures"]),
                      str(c["cut"]), str(c["repaired"]),
                      f"{c['completion_tokens'] / calls:.1f}" if calls else "—")
    console = Console(width=max(Console().width, 100))
    console.print(table)
    rate = float(invocation.get("parse_failure_rate", 0.0))  # type: ignore[arg-type]
    if rate > PARSE_FAILURE_FLAG:
        console.print(f"warning: {rate:.0%} of the skill replies failed to parse (over "
                      f"{PARSE_FAILURE_FLAG:.0%}): the traces measure the model's output "
                      "format as much as the agent.")


RUNNING: dict[str, Path | None] = {"run_dir": None}
"""The run directory the current command writes (set by `open_run`)."""


def run_path(out: Path | None, command: str, dataset: str, *, agent: str | None = None,
             hops: int | None = None) -> Path:
    """--out, else the command's run directory under runs/: `<command>-<agent>-<dataset>-
    h<hops>` for a command that runs an agent with a hop budget of `hops` (so the runs of
    different agents and budgets do not collide), else `<command>-<dataset>`."""
    if out is not None:
        return out
    if hops is None:
        return Path("runs") / f"{command}-{dataset}"
    from cuer_agent.agents import agent_label

    return Path("runs") / f"{command}-{agent_label(agent)}-{dataset}-h{hops}"


def open_run(out: Path, config: JsonRow) -> Any:
    """The run directory, made with `config` (checked against its command's schema) or
    resumed if it holds the same one. It is noted as this command's run, so an interrupt
    can say what was saved there (`_app.user_errors`)."""
    from cuer_agent.studies._common.run_configs import open_run_dir

    run_dir = open_run_dir(out, config)
    RUNNING["run_dir"] = run_dir.path
    return run_dir


def skill_client(engine: Any, seed: int, cache: Path | None, no_cache: bool) -> Any:
    """Backend + cache + ledger from a [backend] section; checks the server (or loads the
    model) before any work starts."""
    from cuer_agent.llm.backends import SkillClient, make_backend
    from cuer_agent.llm.cache import ResponseCache, default_cache_path

    client_backend = make_backend(engine.name, **engine.client_options(seed))
    client_backend.check()  # type: ignore[attr-defined]
    if no_cache:
        return SkillClient(client_backend)
    return SkillClient(client_backend, cache=ResponseCache(cache or default_cache_path()))


def recorded(engine: Any, skills: Any) -> JsonRow:
    """The [backend] section as a run records it (timeout excluded), with the model the
    backend resolved (a default model name, where none was given)."""
    return {**engine.model_dump(mode="json"), "model": skills.backend.model}


def replayed_engine(recorded: Any, timeout: float | None) -> Any:
    """The [backend] section a run recorded, so a replay asks the model the same way;
    `timeout` (not recorded: it does not change a reply) if given."""
    return recorded if timeout is None else recorded.model_copy(update={"timeout": timeout})


def redundancy_flag(value: str | None) -> object:
    """--redundancy as [data] redundancy takes it: "mix", an integer or weights."""
    if value is None or value.strip() == "mix":
        return None if value is None else "mix"
    try:
        parts = [float(p) for p in value.split(",")]
    except ValueError:
        raise CuerError(f"--redundancy must be 1, 2, 3, mix or weights like 0.5,0.5; "
                        f"got {value!r}") from None
    return int(parts[0]) if len(parts) == 1 and parts[0].is_integer() else parts


def persistence(value: str | None) -> str:
    """--fault-persistence, checked before any work."""
    from cuer_agent.interventions.persistence import PERSISTENCES

    if value is None:
        return "corpus"
    if value not in PERSISTENCES:
        raise CuerError(f"--fault-persistence must be one of {', '.join(PERSISTENCES)}, "
                        f"got {value!r}")
    return value


def check_agent(ref: str | None) -> None:
    """--agent: the factory is imported, called and its spec checked against its graph
    before any work (a mismatch is one line, exit 2)."""
    if ref is not None:
        from cuer_agent.agents import load_agent
        load_agent(ref)


EXECUTION_OPTIONS = frozenset({"out", "cache", "no_cache", "progress", "concurrency",
                               "executor_name", "workers", "ray_address", "timeout"})
"""Options that leave a study's results byte-identical: not part of its provenance."""


def command_line(ctx: typer.Context, *, execution: bool = False) -> str:
    """The command as given, with only the options that can change its results (and,
    with `execution`, the execution options too: the command that resumes a run)."""
    words = ["cuer-agent", ctx.info_name or ""]
    for param in ctx.command.params:
        if ((param.name in EXECUTION_OPTIONS and not execution) or not param.opts
                or not on_command_line(ctx, param.name or "")):
            continue
        value = ctx.params[param.name or ""]
        if isinstance(value, bool):
            words.append(param.opts[0] if value or not param.secondary_opts
                         else param.secondary_opts[0])
        else:
            words += [param.opts[0], str(value)]
    return shlex.join(words)

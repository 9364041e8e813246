"""What the study commands share beyond their options: the study config their flags and
--config give (`study_config`), what they print after a study (the model's calls per
skill, a warning for traces a failed request cut short), the checks of --redundancy and
--fault-persistence, a replay's backend, and the command line a run records as its
provenance (`command_line`). The studies themselves are `cuer_agent.studies.entry`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cuer_agent._json import JsonRow
from cuer_agent.cli._options import ConfigFlags, given
from cuer_agent.config import BackendSection, StudyConfig

if TYPE_CHECKING:  # the studies load when a command runs, not when the CLI starts
    from cuer_agent.studies._common.summary_model import Ledger


def on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option `name` was given on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    # by name: typer carries its own copy of click, with its own ParameterSource enum
    return source is not None and source.name == "COMMANDLINE"


FLAG_NAMES = {"retries_per_hop": "--retries", "factory": "--agent", "name": "--backend",
              "names": "--diagnosers", "replace_hardness_sweep": "--replace-hardness"}
"""Config keys whose flag is not named after them (the others: `--key-with-dashes`)."""


def study_config(path: Path | None, *groups: ConfigFlags,
                 **sections: Mapping[str, object]) -> StudyConfig:
    """The study config of --config (None: the defaults) with the values the flags give
    set, validated as one config: a value refused is one line naming its flag. `groups`:
    option groups (`values`); `sections`: a command's own flags, by config section (None:
    not given)."""
    from cuer_agent.config import load_config, with_values

    study = load_config(path)
    values = {name: given(dict(flags)) for name, flags in sections.items()}
    for group in groups:
        for name, group_values in group.values(study).items():
            values[name] = {**values.get(name, {}), **group_values}
    return with_values(study, values, flag_names=FLAG_NAMES)


def seeded(study: StudyConfig, *sections: str) -> StudyConfig:
    """`sections` seeded with [data] seed: --seed seeds everything drawn at random."""
    from cuer_agent.config import with_values

    return with_values(study, {name: {"seed": study.data.seed} for name in sections},
                       flag_names=FLAG_NAMES)


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


def replayed_engine(recorded: BackendSection, timeout: float | None) -> BackendSection:
    """The [backend] section a run recorded, so a replay asks the model the same way;
    `timeout` (not recorded: it does not change a reply) if given."""
    if timeout is None:
        return recorded
    return BackendSection.model_validate({**dict(recorded), "timeout": timeout})


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

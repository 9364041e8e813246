"""The typer application: `app` and its `data` and `trace` groups, `user_errors`, `main`.
A usage error typer finds (an unknown option, a value of the wrong type) is one line and
exit 2, as a `CuerError` is (`OneLineUsageErrors`).

The commands register themselves on these objects when `cuer_agent.cli` imports
`studies`, `evaluation` and `inspection`; the order of those imports is the order of
`--help`.
"""

from __future__ import annotations

import atexit
import functools
import json
import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import typer
from typer.core import TyperGroup

from cuer_agent.errors import CuerError
from cuer_agent.interrupts import install_interrupt_handlers


class OneLineUsageErrors(TyperGroup):
    """The top-level group, whose usage errors are one line and exit 2, as every other
    bad input is (`error: cuer-agent evaluate: No such option: --bogus …`), where typer
    draws a panel under the usage lines. Everything else is as typer does it."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except typer.TyperException as exc:  # a usage error (exit 2): an unknown option
            # or command, a value of the wrong type, a missing argument. A group called
            # without a command has printed its help already.
            if type(exc).__name__ != "NoArgsIsHelpError":
                print(usage_error_line(exc), file=sys.stderr)
            sys.exit(exc.exit_code)
        except typer.Abort:
            print("Aborted!", file=sys.stderr)
            sys.exit(1)
        # An exit code (`typer.Exit`, an interrupt), or what a command returned: nothing.
        sys.exit(code if isinstance(code, int) else 0)


def usage_error_line(exc: typer.TyperException) -> str:
    """`error: <command path>: <message> (see <command path> --help)`, on one line."""
    ctx = getattr(exc, "ctx", None)
    message = " ".join(exc.format_message().split())
    if ctx is None:
        return f"error: {message}"
    return f"error: {ctx.command_path}: {message} (see {ctx.command_path} --help)"


app = typer.Typer(
    cls=OneLineUsageErrors,
    name="cuer-agent",
    help="Which evidence mattered, and where a failure started.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="Inspect data sets.", no_args_is_help=True)
app.add_typer(data_app, name="data")
trace_app = typer.Typer(help="Inspect traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

F = TypeVar("F", bound=Callable[..., Any])
DEBUG = {"on": False}
"""Set by the global `--debug` option: errors also print their traceback."""


@app.callback()
def _global(debug: bool = typer.Option(
        False, "--debug", help="On an error, print the traceback too (an agent node's "
                               "exception: the node's own traceback).")) -> None:
    DEBUG["on"] = debug


CONTEXT = typer.Context.__mro__[1]
"""The click context class typer hands to commands (its own vendored click's)."""
INTERRUPTED = 130
"""The exit code of a command stopped by SIGINT or SIGTERM (128 + SIGINT, as shells say)."""


def command(name: str, *, on: typer.Typer = app) -> Callable[[F], F]:
    """Register a command of `on` (default: the top level) named `name`: its option
    groups spread into options (`_options.option_groups`), its `CuerError` one line and
    exit 2 (`user_errors`)."""
    from cuer_agent.cli._options import option_groups

    def register(func: F) -> F:
        on.command(name)(user_errors(option_groups(func)))
        return func

    return register


def user_errors(func: F) -> F:
    """Report `CuerError` as one line and exit 2 (no traceback); on an interrupt, one
    line saying what was saved and the command that resumes it, and exit 130."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from cuer_agent.studies._common.session import RUNNING

        RUNNING["run_dir"] = None
        try:
            return func(*args, **kwargs)
        except CuerError as exc:
            if DEBUG["on"]:
                traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2) from None
        except KeyboardInterrupt:
            ctx = next((a for a in (*args, *kwargs.values()) if isinstance(a, CONTEXT)),
                       None)
            print(interrupted_line(RUNNING["run_dir"], ctx), file=sys.stderr)
            raise typer.Exit(code=INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def interrupted_line(run_dir: Path | None, ctx: Any) -> str:
    """What an interrupted command saved, and the exact command that carries on (the
    same command: a run directory resumes from its finished rows)."""
    if run_dir is None:
        return "interrupted: nothing was saved (no run had started)"
    from cuer_agent.cli._study import command_line

    rows = {p.relative_to(run_dir).as_posix(): _lines(p)
            for p in sorted(run_dir.rglob("*.jsonl"))}
    saved = (", ".join(f"{name} {n}" for name, n in rows.items() if n) or "no finished row")
    command = (command_line(ctx, execution=True) if ctx is not None
               else "the same command")
    return (f"interrupted: finished rows are saved in {run_dir} ({saved}); resume with: "
            f"{command}")


def _lines(path: Path) -> int:
    """Complete lines of a JSONL file (a line cut by the interrupt is not a row)."""
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.endswith(b"\n"))


def print_json(obj: object) -> None:
    typer.echo(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def main() -> None:
    """The `cuer-agent` entry point. SIGTERM is an interrupt like Ctrl-C; after an
    interrupt the process leaves at once: worker processes are stopped, and a generation
    still running in a native thread (llama.cpp) is not waited for — every finished row
    is already on disk, and a rerun of the same command resumes from there."""
    install_interrupt_handlers()
    try:
        app()
    except SystemExit as exc:
        if exc.code != INTERRUPTED:
            raise
        # An interpreter's normal exit would wait for pool threads still asking a model
        # server, finalise under a native generation, and spend seconds collecting a
        # study's objects: leave at once instead, after the exit handlers (multiprocessing
        # releases its semaphores there) — every finished row is already on disk.
        for child in multiprocessing.active_children():
            child.terminate()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)

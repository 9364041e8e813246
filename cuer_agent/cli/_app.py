"""The typer application: `app` and its `data` and `trace` groups, `user_errors`, `main`.

The commands register themselves on these objects when `cuer_agent.cli` imports
`studies`, `evaluation` and `inspection`; the order of those imports is the order of
`--help`.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from cuer_agent.errors import CuerError

app = typer.Typer(
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


def user_errors(func: F) -> F:
    """Report `CuerError` as one line and exit 2 (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CuerError as exc:
            if DEBUG["on"]:
                traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


def print_json(obj: object) -> None:
    typer.echo(json.dumps(obj, sort_keys=True, ensure_ascii=False))


def main() -> None:
    app()

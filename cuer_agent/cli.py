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


def main() -> None:
    app()

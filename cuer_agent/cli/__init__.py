"""The `cuer-agent` command line (typer).

Every command turns a `CuerError` (bad input, unknown name, bad option) into one line on
stderr and exit code 2, before or without losing any work already written.

Modules: `_app` (the typer app, its `data` and `trace` groups, `user_errors`, `main`),
`_options` (the options several commands share, and the option groups `ModelFlags` and
`ExecutionFlags`), `_study` (opening a study: config sections, backend client, data, run
directory, provenance), `studies` (`run`, `cuer`, `propagate`), `evaluation`
(`evaluate`, `replay`, `report`), `inspection` (`data stats`, `score`, `export`,
`diagnose`, `trace show`).
"""

from __future__ import annotations

# isort: off
# The order of registration is the order of `--help`.
from cuer_agent.cli import studies, evaluation, inspection
from cuer_agent.cli._app import app, main
# isort: on

__all__ = ["app", "evaluation", "inspection", "main", "studies"]

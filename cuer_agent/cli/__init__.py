"""The `cuer-agent` command line (typer).

Every command turns a `CuerError` (bad input, unknown name, bad option) into one line on
stderr and exit code 2, before or without losing any work already written.

A thin layer: each study command turns its flags into one validated `StudyConfig` and
calls the study's entry point (`cuer_agent.studies.entry`, which the Python API calls
too), then prints what came of it.

Modules: `_app` (the typer app, its `data` and `trace` groups, `command`, `user_errors`,
`main`), `_options` (the options several commands share, and their option groups),
`_study` (flags → config, what the study commands print, provenance), `studies` (`run`,
`cuer`, `propagate`), `evaluation` (`evaluate`, `replay`, `report`), `inspection`
(`data stats`, `score`, `export`, `diagnose`, `trace show`).
"""

from __future__ import annotations

# isort: off
# The order of registration is the order of `--help`.
from cuer_agent.cli import studies, evaluation, inspection
from cuer_agent.cli._app import app, main
# isort: on

__all__ = ["app", "evaluation", "inspection", "main", "studies"]

"""cuer-agent: which evidence mattered, and where a failure started.

The studies, as Python functions (`cuer_agent.api`; docs/api.md): `evaluate`, `run`,
`cuer`, `propagate`, `diagnose`, each taking a `cuer_agent.config.StudyConfig` and
returning its typed summary, and `load_run`, which reads a run directory back. Other
public areas: `cuer_agent.trace` (the observable trace), `cuer_agent.data` (examples and
loaders), `cuer_agent.retrieval` (BM25 and LangChain retrievers).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuer_agent.api import (
        Execution,
        LoadedRun,
        TraceSource,
        cuer,
        diagnose,
        evaluate,
        load_run,
        propagate,
        run,
    )

__version__ = "0.1.0"

__all__ = ["Execution", "LoadedRun", "TraceSource", "__version__", "cuer", "diagnose",
           "evaluate", "load_run", "propagate", "run"]


def __getattr__(name: str) -> object:
    # The API loads the studies (LangGraph, numpy, ...): only when first asked for, so
    # `import cuer_agent.trace` and the CLI's start stay light.
    if name in __all__:
        return getattr(importlib.import_module("cuer_agent.api"), name)
    raise AttributeError(f"module 'cuer_agent' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names too, so `dir(cuer_agent)` and editors' completion list the API.
    return sorted({*globals(), *__all__})

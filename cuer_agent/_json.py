"""The one name for a JSON object at an edge of the program.

Inside the program data are typed: trace models, summary models, TypedDict rows. A
`JsonObject` is what crosses an edge before it is typed or after it was written out —
a JSONL row or `config.json` read from a run directory, an HTTP request or response
body, a LangGraph checkpoint's JSON-native state, an interchange span, a raw record of
a data set file. `tests/test_registry.py` holds the modules allowed to use it
(`EDGE_MODULES`), so an untyped dict cannot spread inward under this name. `JsonRow` is
typed (read-only, values `object`: a reader must narrow them) and may be used anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object as read or about to be written, keys not yet typed."""

JsonRow: TypeAlias = Mapping[str, object]
"""Anything written out as one JSON object: a TypedDict row, a plain dict. Read-only,
so a TypedDict is accepted (it is not a `dict[str, Any]` to a type checker)."""

"""How a value that fails its pydantic model is told: one line naming the first bad key
path (`agentic.recovery.empty_retrieval: ...`), a missing key next to the unknown key
that may be its new name, and how many more problems there are. Used by every reader of
a file the toolkit wrote (`summary.json`, a run's `config.json`)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def message(error: Any) -> str:
    """An error's text without pydantic's "Value error, " prefix (our validators' own
    messages are already sentences)."""
    text = str(error["msg"])
    return text.removeprefix("Value error, ")


def _key_path(loc: tuple[str | int, ...], data: Any, *, key_last: bool) -> list[str]:
    """The keys of an error location, without the union tags pydantic inserts (model
    names: an element that is not a key of the data there — except the last one when
    `key_last`: a missing key)."""
    keys, here = [], data
    for i, part in enumerate(loc):
        if (part in here if isinstance(here, dict) else
                isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here)):
            here = here[part]
        elif not (key_last and i == len(loc) - 1):
            continue
        keys.append(str(part))
    return keys


def problem(exc: ValidationError, data: Any) -> str:
    """One line: the first mismatch as `<key path>: <what is wrong>` — a missing key
    names the unknown key beside it that may be its new name — and how many more."""
    errors = exc.errors()
    first, told = errors[0], 1
    keyed = first["type"] in {"missing", "extra_forbidden"}
    keys = _key_path(first["loc"], data, key_last=keyed)
    if keyed:
        *parent, key = keys
        where = ".".join(parent)
        what = f"{'missing' if first['type'] == 'missing' else 'unknown'} key {key!r}"
        beside = [str(e["loc"][-1]) for e in errors
                  if e["type"] == "extra_forbidden" and e["loc"][:-1] == first["loc"][:-1]]
        if first["type"] == "missing" and beside:
            what += f" (found {beside[0]!r} instead)"
            told += 1
    else:
        where, what = ".".join(keys), message(first)
    more = f", and {len(errors) - told} more problem(s)" if len(errors) > told else ""
    return f"{where or '(top level)'}: {what}{more}"

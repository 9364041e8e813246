"""What a model may write: each skill's reply schema with every field bounded, the token
bound that follows from it, and how a reply cut at that bound is closed.

* **Bounded fields.** Every free-text field has a `maxLength` (`LIMITS`), every id list a
  `maxItems` and, when the request shows evidence, its items are an `enum` of the ids in
  view (constrained decoding cannot invent one); every field is required, the decisive one
  first (a finding before its reason, an answer before its rationale: a reply cut short
  keeps what matters).
* **A token bound derived from the schema** (`token_bound`): the most bytes any reply
  matching the bounded schema can have — a string character as a JSON escape (`ESCAPE`,
  more than its UTF-8 bytes), the whitespace a grammar allows (`WHITESPACE` at each place),
  numbers of at most `NUMBER` characters — so a grammar-constrained generation always
  closes before it (a token is at least one byte).
* **A cut reply is closed, not guessed** (`close_cut`): a server that does not enforce the
  schema may stop at the bound mid-field; the reply is then closed after the last field it
  completed and validated like any other, provided it holds every decisive field (all
  but the last, explanatory one: `missing`). The caller counts it as repaired.
* **Bounds are checked** (`violation`) on every remote reply, since a server that does not
  enforce the schema may exceed them.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from cuer_agent._json import JsonObject
from cuer_agent.llm.skills import RESPONSES, AnswerRequest, BlameRequest, ReadRequest

VERSION = 1
"""Changes whenever a bound changes (part of a remote backend's cache key)."""
LIMITS: dict[str, dict[str, int]] = {
    "plan": {"subquery": 160, "reason": 160},
    "read": {"finding": 100, "reason": 160},
    "answer": {"answer": 100, "rationale": 200},
    "judge": {"rationale": 200},
    "check": {"reason": 200},
    "blame": {"agent": 80, "reason": 200},
    "verdict": {"reason": 200},
}
"""Skill → free-text field → its maxLength in characters."""
LISTS: dict[str, dict[str, int]] = {
    "read": {"selected_ids": 5}, "answer": {"used_ids": 8}, "check": {"hops": 8}}
"""Skill → list field → its maxItems."""
ID_LISTS: dict[str, str] = {"read": "selected_ids", "answer": "used_ids"}
"""Skill → the field that lists evidence ids (an enum of the ids in view)."""
ORDER: dict[str, tuple[str, ...]] = {
    "plan": ("action", "subquery", "reason"),
    "read": ("finding", "selected_ids", "support", "confidence", "reason"),
    "answer": ("answer", "confidence", "used_ids", "rationale"),
    "judge": ("stage", "hop", "rationale"),
    "check": ("consistent", "hops", "reason"),
    "blame": ("step", "agent", "reason"),
    "verdict": ("decisive", "reason"),
}
"""Skill → its fields, the decisive one first."""
WHITESPACE = 24
"""Characters of whitespace a JSON grammar allows at one place (llama.cpp: a newline and up
to 20 blanks)."""
NUMBER = 56
"""Characters of the longest number a JSON grammar allows (sign, 16 integral digits, a
fraction of 16, an exponent)."""
ESCAPE = 6
"""Characters one escaped character of a string can take (\\uXXXX)."""


def ids_in_view(skill: str, request: BaseModel) -> tuple[str, ...]:
    """The evidence ids a reply to `request` may name (empty: the skill names none)."""
    if isinstance(request, ReadRequest):
        return tuple(dict.fromkeys(e.id for e in request.evidence))
    if isinstance(request, AnswerRequest):
        return tuple(dict.fromkeys(e.id for hop in request.hops for e in hop.evidence))
    return ()


def enums_in_view(skill: str, request: BaseModel) -> dict[str, tuple[Any, ...]]:
    """The values a reply's fields may take beyond their type (empty: no such field): the
    step judge names one of the steps shown and one of the log's agents."""
    if isinstance(request, BlameRequest):
        return {"step": tuple(dict.fromkeys(s.step for s in request.steps)),
                "agent": tuple(sorted({s.agent for s in request.steps}))}
    return {}


@functools.cache
def _base(skill: str) -> JsonObject:
    """The skill's reply schema, every field bounded and required, in `ORDER`."""
    schema = copy.deepcopy(RESPONSES[skill].model_json_schema())
    properties = schema["properties"]
    for name, limit in LIMITS[skill].items():
        properties[name]["maxLength"] = limit
    for name, limit in LISTS.get(skill, {}).items():
        properties[name]["maxItems"] = limit
    schema["properties"] = {name: properties[name] for name in ORDER[skill]}
    schema["required"] = list(ORDER[skill])
    return schema


def bounded_schema(skill: str, ids: Sequence[str] = (),
                   enums: Mapping[str, Sequence[Any]] | None = None) -> JsonObject:
    """The bounded reply schema: the skill's id list (if it has one) may name only `ids`
    (none when there are none); a field of `enums` only its values."""
    schema = _base(skill)
    if enums:
        schema = copy.deepcopy(schema)
        for name, values in enums.items():
            entry = schema["properties"][name]
            entry.pop("maxLength", None)
            entry["enum"] = list(values)
    field = ID_LISTS.get(skill)
    if field is None:
        return schema
    schema = copy.deepcopy(schema)
    entry = schema["properties"][field]
    entry["maxItems"] = min(entry["maxItems"], len(ids))
    if ids:
        entry["items"] = {"type": "string", "enum": list(ids)}
    return schema


def _chars(schema: JsonObject) -> int:
    """The most characters an instance of `schema` can take (see the module docstring)."""
    kind = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    if kind == "string":
        return 2 + ESCAPE * int(schema["maxLength"])
    if kind in ("number", "integer"):
        return NUMBER
    if kind == "boolean":
        return 5
    if kind == "array":
        items = int(schema["maxItems"])
        return 2 + (items * (_chars(schema["items"]) + 1 + 2 * WHITESPACE) if items else 0)
    if kind == "object":
        fields = sum(len(json.dumps(name)) + 2 + 4 * WHITESPACE + _chars(value)
                     for name, value in schema["properties"].items())
        return 2 + 2 * WHITESPACE + fields
    raise ValueError(f"no bound for schema {schema!r}")


def token_bound(schema: JsonObject) -> int:
    """Output tokens a reply matching the bounded `schema` can take, at most (a token is
    at least one character)."""
    return _chars(schema)


def violation(skill: str, reply: dict[str, Any], ids: Sequence[str],
              enums: Mapping[str, Sequence[Any]] | None = None) -> str:
    """The first bound a parsed reply breaks ("" when it keeps them all)."""
    for name, values in (enums or {}).items():
        if reply.get(name) not in values:
            return f"{name}: {reply.get(name)!r} is not one of the values in view"
    for name, limit in LIMITS[skill].items():
        if len(str(reply.get(name, ""))) > limit:
            return f"{name}: longer than {limit} characters"
    for name, limit in LISTS.get(skill, {}).items():
        if len(reply.get(name) or ()) > limit:
            return f"{name}: more than {limit} items"
    field = ID_LISTS.get(skill)
    if field is not None:
        unknown = [i for i in reply.get(field) or () if i not in set(ids)]
        if unknown:
            return f"{field}: {unknown[0]!r} is not an id in view"
    return ""


def close_cut(text: str) -> dict[str, Any] | None:
    """A reply cut mid-way, closed after the last field it completed — a value counts as
    completed once a comma or the closing brace follows it (a number cut at "0" of "0.5"
    looks whole): those fields, or None when not even one was completed."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
    if not stripped.startswith("{"):
        return None
    decoder = json.JSONDecoder()
    fields: dict[str, Any] = {}
    at = 1
    while True:
        at = _skip(stripped, at)
        try:
            key, at = decoder.raw_decode(stripped, at)
            at = _skip(stripped, at)
            if not isinstance(key, str) or stripped[at:at + 1] != ":":
                break
            value, at = decoder.raw_decode(stripped, _skip(stripped, at + 1))
        except (json.JSONDecodeError, IndexError):
            break
        at = _skip(stripped, at)
        if stripped[at:at + 1] not in (",", "}"):  # unterminated: a number may be cut
            break
        fields[key] = value
        if stripped[at] == "}":
            break
        at += 1
    return fields or None


def missing(skill: str, fields: dict[str, Any]) -> str:
    """The decisive fields (all but the last, explanatory one of `ORDER`) a closed reply
    lacks, comma-separated ("" when it has them all)."""
    return ", ".join(name for name in ORDER[skill][:-1] if name not in fields)


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at

"""Reading dataset files — JSON arrays and JSON Lines — with errors that name the place.

The loaders (`hotpotqa`, `twowiki`, `musique`) read their files through this module and
validate each record through a `RawRecord`. Every problem becomes one `DataError` whose
message names the file and, where known:

* the **line** — 1-based, as an editor shows it (JSON syntax errors; every JSONL record);
* the **record** — 0-based position of the record (index into the JSON array, or among
  the non-blank lines of a JSONL file), so ``data[17]`` is ``record 17``.

Nothing here raises `KeyError`, `TypeError` or `UnicodeDecodeError` at a caller, and
nothing ever returns part of a file: a file either loads completely or raises.

Formats:

* **JSON array** (HotpotQA, 2WikiMultihopQA): the whole file is one JSON array whose
  items are record objects.
* **JSON Lines** (MuSiQue): one JSON object per line; blank lines are skipped. Lines
  are split on ``\\n`` only (a ``\\r`` before it is JSON whitespace), so a raw U+2028
  inside a string does not start a new line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from cuer_agent._json import JsonObject
from cuer_agent.data._example import Dataset, Example
from cuer_agent.errors import ConfigError, DataError

_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is a subclass of int
    (int, "number"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


FORMATS = {"hotpotqa": "HotpotQA", "2wiki": "2WikiMultihopQA", "musique": "MuSiQue",
           "whowhen": "Who&When"}
"""The record formats a file is sniffed for (`record_format`), with their names."""


def record_format(value: object) -> str | None:
    """Which of `FORMATS` a parsed record is, by the keys only that format has together
    (2Wiki's records are HotpotQA's plus ``evidences``); None: none of them."""
    if not isinstance(value, dict):
        return None
    keys = value.keys()
    if "history" in keys and ({"mistake_step", "mistake_agent"} & keys):
        return "whowhen"
    if {"paragraphs", "question_decomposition"} <= keys:
        return "musique"
    if {"context", "supporting_facts"} <= keys:
        return "2wiki" if "evidences" in keys else "hotpotqa"
    return None


def other_format(name: str, value: object) -> str:
    """Why a record of another known format is not a `name` record ("" when it is not
    one): a 2Wiki file read as HotpotQA would load — its records carry every HotpotQA
    key — and be reported under the wrong name."""
    found = record_format(value)
    if found is None or found == name:
        return ""
    return f"a {FORMATS[found]} record, not {FORMATS.get(name, name)}: {_reading(found)}"


def _reading(found: str) -> str:
    if found == "whowhen":
        return "a failure log, not a question data set"
    return f"read it with --dataset {found}"


def _file_format(text: str) -> str | None:
    """The known format of a text that is one JSON value (an array: its first record), or
    else of its first line; None: neither is. A hint for an error about a file's shape."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        try:  # JSON Lines read as one value: its first line
            data = json.loads(text.lstrip().split("\n", 1)[0])
        except (ValueError, RecursionError):
            return None
    return record_format(data[0] if isinstance(data, list) and data else data)


def _file_of(found: str | None) -> str:
    """": a MuSiQue file, read it with --dataset musique" for a format found; else ""."""
    return f": a {FORMATS[found]} file, {_reading(found)}" if found else ""


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type (object, array, string, number, …)."""
    if value is None:
        return "null"
    for kind, name in _JSON_TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def is_int(value: object) -> bool:
    """True for a JSON integer (and not for a boolean, which Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_str_list(value: object) -> bool:
    """True for a JSON array of strings."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class RawRecord:
    """One record object as read from a file, with accessors that fail precisely."""

    path: Path
    index: int
    """0-based record position in the file."""
    line: int | None
    """1-based line of the record (JSONL); None inside a JSON array."""
    data: JsonObject
    """The record as parsed: a data set file is an edge of the program."""

    def fail(self, problem: str) -> NoReturn:
        """Raise a `DataError` naming this record's file, line and index."""
        raise DataError(self.path, problem, record=self.index, line=self.line)

    def require(self, key: str) -> Any:
        """The value under `key`; a missing key is a `DataError` naming it."""
        if key not in self.data:
            self.fail(f"missing key {key!r}")
        return self.data[key]

    def text(self, key: str) -> str:
        """A required string value."""
        value = self.require(key)
        if not isinstance(value, str):
            self.fail(f"{key!r} must be a string, got {json_type(value)}")
        return value

    def optional_text(self, key: str) -> str | None:
        """An optional string value: None when the key is absent."""
        if key not in self.data:
            return None
        return self.text(key)

    def items(self, key: str) -> list[Any]:
        """A required array value (its items are checked by the caller)."""
        value = self.require(key)
        if not isinstance(value, list):
            self.fail(f"{key!r} must be an array, got {json_type(value)}")
        return value

    def text_list(self, key: str) -> list[str]:
        """A required array of strings."""
        value = self.items(key)
        for position, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{key!r} must be an array of strings; item {position} is a "
                          f"{json_type(item)}")
        return value

    def optional_bool(self, key: str) -> bool | None:
        """An optional boolean value: None when the key is absent."""
        if key not in self.data:
            return None
        value = self.data[key]
        if not isinstance(value, bool):
            self.fail(f"{key!r} must be true or false, got {json_type(value)}")
        return value


def read_text(path: Path) -> str:
    """The file's text (UTF-8, optional BOM); missing, unreadable or empty is a DataError."""
    if not path.exists():
        raise DataError(path, "file not found")
    if path.is_dir():
        raise DataError(path, "is a directory, expected a data file")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataError(path, f"cannot read file: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DataError(path, f"not UTF-8 text (byte offset {err.start})", line=line) from None
    if not text.strip():
        raise DataError(path, "file is empty")
    return text


def parse_json(path: Path, text: str, *, line: int | None = None) -> Any:
    """Parse one JSON document; errors carry json's line (or the given JSONL line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = err.lineno if line is None else line
        hint = ""
        if line is None and err.msg == "Extra data":
            hint = " — more than one JSON value; is this a JSON Lines file?"
            if found := _file_format(text):
                hint += f" (its records are {FORMATS[found]}'s: {_reading(found)})"
        raise DataError(path, f"invalid JSON: {err.msg} (column {err.colno}){hint}",
                        line=where) from None
    except RecursionError:
        raise DataError(path, "invalid JSON: nesting too deep", line=line) from None
    except ValueError as err:  # e.g. an integer literal longer than Python's digit limit
        raise DataError(path, f"invalid JSON: {err}", line=line) from None


def as_record(path: Path, index: int, line: int | None, value: Any) -> RawRecord:
    """Wrap a parsed value as a record; anything but a JSON object is a DataError."""
    if not isinstance(value, dict):
        raise DataError(path, f"expected a JSON object, got {json_type(value)}",
                        record=index, line=line)
    return RawRecord(path=path, index=index, line=line, data=value)


def read_json_array(path: Path) -> list[RawRecord]:
    """All records of a file holding one JSON array of objects."""
    text = read_text(path)
    data = parse_json(path, text)
    if not isinstance(data, list):
        raise DataError(path, "top level must be a JSON array of records, got "
                        f"{json_type(data)}{_file_of(_file_format(text))}")
    return [as_record(path, index, None, value) for index, value in enumerate(data)]


def read_jsonl(path: Path) -> list[RawRecord]:
    """All records of a JSON Lines file (one object per line, blank lines skipped)."""
    text = read_text(path)
    lines = text.split("\n")
    first = next((number for number, line in enumerate(lines, start=1) if line.strip()), 0)
    head = lines[first - 1].strip() if first else ""
    if head == "[":
        raise DataError(path, "expected JSON Lines (one object per line), found a "
                        f"multi-line JSON array{_file_of(_file_format(text))}", line=first)
    if head and not _is_json(head) and (found := _file_format(text)):
        raise DataError(path, "expected JSON Lines (one object per line), found one JSON "
                        f"value over several lines{_file_of(found)}", line=first)
    records: list[RawRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        value = parse_json(path, line, line=number)
        if not records and isinstance(value, list) and (found := _file_format(line)):
            raise DataError(path, f"expected a JSON object, got array{_file_of(found)}",
                            record=0, line=number)
        records.append(as_record(path, len(records), number, value))
    return records


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _first(name: str, record: RawRecord, convert: Callable[[RawRecord], Example]) -> Example:
    """The file's first record converted, unless it is of another known format."""
    problem = other_format(name, record.data)
    try:
        example = convert(record)
    except DataError as err:
        if not problem:
            raise
        raise DataError(err.path, f"{err.problem} ({problem})", record=err.record,
                        line=err.line) from None
    if problem:
        record.fail(problem)
    return example


def check_n(n: int | None) -> int | None:
    """Validate the record limit: None (all) or a positive integer."""
    if n is None:
        return None
    if not is_int(n) or n < 1:
        raise ConfigError(f"n must be a positive integer or None, got {n!r}")
    return n


def check_unique_ids(examples: Iterable[Example], records: Iterable[RawRecord]) -> None:
    """Two records with the same id would collide in run files: a DataError."""
    seen: dict[str, int] = {}
    for example, record in zip(examples, records, strict=True):
        if example.id in seen:
            record.fail(f"duplicate id {example.id!r} (also record {seen[example.id]})")
        seen[example.id] = record.index


def build_dataset(name: str, path: Path, records: list[RawRecord],
                  convert: Callable[[RawRecord], Example], n: int | None) -> Dataset:
    """Convert the first `n` records (all when None), after the whole file parsed.

    A file without any record (``[]``) is a DataError: an empty evaluation is never
    what was meant; so is a file whose first record is of another known format
    (`other_format`: a file's format is its first record's), named — also when the
    record does not convert (a HotpotQA record read as 2Wiki lacks ``evidences``: the
    error names the key and the format).
    """
    if not records:
        raise DataError(path, "no records in file")
    chosen = records if n is None else records[:n]
    examples = [_first(name, chosen[0], convert)]
    examples += [convert(record) for record in chosen[1:]]
    check_unique_ids(examples, chosen)
    return Dataset(name=name, examples=examples, source=str(path),
                   info={"records_in_file": len(records), "loaded": len(examples)})

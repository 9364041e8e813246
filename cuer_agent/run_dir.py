"""Run directories: the resolved config, append-only JSONL rows, and resuming.

A run directory holds `config.json` (what was asked, enough to re-create the run), one
or more JSONL files whose rows are appended and flushed as they complete, and
`summary.json` written at the end. Giving the same command again resumes: rows already
written are kept and skipped. A truncated last line (the process died mid-write) is
dropped with a warning; garbage in the middle of a file is an error naming the file and
line, and nothing is overwritten.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from cuer_agent._json import JsonObject, JsonRow
from cuer_agent._validation import problem
from cuer_agent.errors import ConfigError, DataError
from cuer_agent.interrupts import raise_if_interrupted

CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"
M = TypeVar("M", bound=BaseModel)
"""A summary's model."""
R = TypeVar("R")
"""A row type (a TypedDict) a study reads its rows back as."""
RUN_OUTPUTS = frozenset({SUMMARY_FILE, "ledger.json", "report.md", "report.html",
                         "single_shot", "agentic"})
"""What a run directory holds besides its config and JSONL rows (`evaluate`'s two
studies are subdirectories)."""


def canonical_json(obj: Any, *, indent: int | None = None) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=indent,
                      separators=None if indent else (",", ":"))


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def open(self, config: JsonRow) -> None:
        """Create the directory, or check that an existing one was made by the same config.
        Run files without a config are refused: what made them is unknown."""
        self.path.mkdir(parents=True, exist_ok=True)
        cfg_path = self.path / CONFIG_FILE
        text = canonical_json(config, indent=2) + "\n"
        if cfg_path.exists():
            if cfg_path.read_bytes() != text.encode("utf-8"):
                read_config(self.path)  # a corrupted config.json is named as such
                raise ConfigError(f"{self.path} holds a run with a different config; "
                                  "choose another --out or delete it")
            return
        found = sorted(p.name for p in self.path.iterdir()
                       if p.suffix == ".jsonl" or p.name in RUN_OUTPUTS)
        if found:  # resuming them under this config could mix two runs' rows
            raise ConfigError(f"{self.path} holds run files ({', '.join(found)}) but no "
                              f"{CONFIG_FILE}, so what made them is unknown; choose another "
                              "--out or delete it")
        write_atomic(cfg_path, text)

    def rows(self, name: str) -> list[JsonObject]:
        return list(read_rows(self.path / name))

    def append(self, name: str, row: JsonRow) -> None:
        self.append_rows(name, [row])

    def append_rows(self, name: str, rows: Sequence[JsonRow]) -> None:
        """Append rows and make them durable with one fsync (one per example, not per
        row: a kill mid-batch leaves a torn tail, which resuming drops)."""
        raise_if_interrupted()  # an interrupt swallowed by a finaliser stops here
        if not rows:
            return
        with open(self.path / name, "a", encoding="utf-8") as fh:
            fh.write("".join(canonical_json(row) + "\n" for row in rows))
            fh.flush()
            os.fsync(fh.fileno())

    def rewrite(self, name: str, rows: Sequence[JsonRow]) -> None:
        """Replace a JSONL file's rows at once (write + rename: never half a file)."""
        write_atomic(self.path / name, "".join(canonical_json(r) + "\n" for r in rows))

    def keep_examples(self, name: str, example_ids: set[str],
                      rows: list[JsonObject] | None = None) -> None:
        """Drop the rows of `name` whose example is not in `example_ids` (the rows of an
        example cut off mid-write), so a resumed run writes them exactly once. `rows`:
        the file's rows, when the caller has just read them."""
        rows = self.rows(name) if rows is None else rows
        kept = [r for r in rows if example_of(r) in example_ids]
        if len(kept) != len(rows):
            self.rewrite(name, kept)

    def restore_data_order(self, names: Iterable[str], example_ids: list[str],
                           kept: Iterable[str]) -> None:
        """After an invocation appended the examples it ran (`example_ids`: the data
        order; `kept`: the examples already complete when it started), put the rows of
        `names` back in data order (stable within an example) if one of them went after
        a kept later example — a redone example of a resumed run. That is decided from
        the ids, so a fresh run, or one resumed where it stopped, is not read back."""
        order = {ex: i for i, ex in enumerate(example_ids)}
        kept = set(kept)
        ran = [order[ex] for ex in example_ids if ex not in kept]
        if not ran or all(order.get(ex, -1) < min(ran) for ex in kept):
            return
        for name in names:
            rows = self.rows(name)
            ranks = [order.get(example_of(r), len(order)) for r in rows]
            if ranks != sorted(ranks):
                self.rewrite(name, [r for _, r in sorted(zip(ranks, rows, strict=True),
                                                          key=lambda pair: pair[0])])

    def write_model(self, summary: M) -> M:
        """Write `summary.json` from a summary built as its model: the keys it was given
        (a key left unset stays absent), by their JSON names, sorted as every summary's
        are. Returns `summary`."""
        raise_if_interrupted()
        data = summary.model_dump(mode="json", by_alias=True, exclude_unset=True)
        write_atomic(self.path / SUMMARY_FILE, canonical_json(data, indent=2) + "\n")
        return summary


def read_config(run_dir: str | Path) -> JsonObject:
    """A run directory's `config.json`. Missing, or not a JSON object (a damaged file) →
    a `CuerError` naming the file (and the line), and nothing is touched."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise ConfigError(f"{path}: no such file (not a run directory)")
    try:
        config = json.loads(path.read_bytes())
    except OSError as exc:  # a directory, or no permission
        raise DataError(path, f"cannot be read ({exc.strerror}); nothing was changed") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        raise DataError(path, f"corrupted, not valid JSON ({exc}); nothing was changed: "
                              "delete the run directory or choose another --out",
                        line=line) from None
    if not isinstance(config, dict):
        raise DataError(path, "corrupted, not a JSON object; nothing was changed: delete the "
                              "run directory or choose another --out")
    return config


def example_of(row: JsonRow) -> str:
    """The example a row belongs to (study rows carry it in their intervention record,
    a `run` row in its trace)."""
    record = row.get("record")
    if isinstance(record, dict):
        return str(record["example_id"])
    trace = row.get("trace")
    return str(trace["example_id"] if isinstance(trace, dict) else row["example_id"])


def request_failed(rows: Iterable[JsonRow]) -> set[str]:
    """Examples with a trace cut short by a request that failed after all its attempts
    (`trace.error`). That is the model server's failure, not the agent's — a server that
    went down mid-run fails every request after it — so a resumed run redoes these
    examples instead of keeping them: rerunning the command once the server is back
    completes the run. A request that fails on every attempt fails the same way again."""
    return {example_of(r) for r in rows if _trace_error(r.get("trace"))}


def _trace_error(trace: object) -> bool:
    return isinstance(trace, dict) and bool(trace.get("error"))


def checked_rows(rows: Iterable[JsonRow], as_rows: TypeAdapter[list[R]],
                 source: str | Path) -> list[R]:
    """`rows` read from the JSONL file `source`, validated as the rows a study writes
    (`as_rows`). A row of another shape — a damaged or hand-edited file, a run written by
    another version — is a `DataError` naming the file, the row (1-based) and the first
    field that does not fit; nothing is written."""
    rows = list(rows)
    try:
        return as_rows.validate_python(rows)
    except ValidationError as exc:
        index = int(exc.errors()[0]["loc"][0])
        raise DataError(source, f"not a row this version writes ({problem(exc, rows[index])}); "
                                "nothing was changed", record=index + 1) from None


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _row(raw: bytes) -> JsonObject:
    """One JSONL line as a JSON object; ValueError if it is not one."""
    row = json.loads(raw)
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    return row


def scan_rows(path: Path, *, torn_tail_ok: bool = False) -> Iterator[JsonObject]:
    """JSONL rows, read only (`read_rows` repairs a run directory it resumes; this never
    writes). A bad line raises `DataError` naming the file and line — except an unfinished
    last line (no newline) when `torn_tail_ok`, as a run still being written has."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = _row(raw)
        except ValueError as exc:
            if torn_tail_ok and lineno == len(lines):
                return
            raise DataError(path, f"not a JSON object ({exc})", line=lineno) from None
        yield row


def read_rows(path: Path) -> Iterator[JsonObject]:
    """JSONL rows; a torn last line is repaired (truncated off), other bad lines raise."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = lineno == len(lines) or (lineno == len(lines) - 1 and complete)
        try:
            row = _row(raw)
        except ValueError as exc:
            if is_last and not complete:
                _truncate_torn_tail(path, len(data) - len(raw))
                return
            raise DataError(path, f"corrupted row ({exc})", line=lineno) from None
        if is_last and not complete:
            # Valid JSON but no newline: the write was cut right at the end. Keep it.
            with open(path, "ab") as fh:
                fh.write(b"\n")
        yield row


def _truncate_torn_tail(path: Path, keep: int) -> None:
    print(f"warning: {path}: dropping a torn last line (interrupted write)", file=sys.stderr)
    with open(path, "r+b") as fh:
        fh.truncate(keep)

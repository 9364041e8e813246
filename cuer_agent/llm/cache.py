"""Response cache (SQLite) and call ledger.

Every skill call goes through one `ResponseCache`, keyed by backend, model, the
backend's version (for the rule reader, a hash of its rules and tables), skill, the
rendered request (the exact prompt a server would receive) and the decoding parameters.
A finished command given again therefore makes zero backend calls, and a fork's prefix
— never re-requested — costs nothing.

The cache is one SQLite file in WAL mode: safe for several threads (one connection
guarded by a lock) and several processes (SQLite's own locking; `busy_timeout` waits
instead of failing), with the replies this process has read or written kept in memory
in front of it (a stored reply never changes). Valid replies and parse failures are
stored — both are the deterministic outcome of a temperature-0 request; transport
errors are not.

The `Ledger` counts what a run spent: backend calls, cache hits, tokens, latency,
retries, parse failures, errors, per skill. It is written into every summary.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonObject
from cuer_agent._lru import LRU

CACHE_SCHEMA = 2
"""2: the key holds the backend's version (an edited rule reader is never served old
answers)."""
MEMORY_ENTRIES = 50_000
"""Replies a `ResponseCache` keeps in memory in front of its file (a few hundred bytes
each)."""


def cache_key(backend: str, model: str, skill: str, rendered: Any,
              decoding: JsonObject, version: str = "") -> str:
    """sha256 over a canonical JSON of everything that determines the reply: backend,
    model, the backend's `version` (the rule reader: a hash of its rules and tables),
    skill, rendered request, decoding parameters."""
    payload = json.dumps(
        {"v": CACHE_SCHEMA, "backend": backend, "model": model, "version": version,
         "skill": skill, "request": rendered, "decoding": decoding},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """A stored outcome: `text` is the reply JSON, or None for a parse failure."""

    text: str | None
    prompt_tokens: int
    completion_tokens: int
    error: str = ""
    retries: int = 0
    """Retries it took to get this reply: a replayed reply reports them again, so a
    run's retry count does not depend on what the cache held when it resumed."""


def _enable_wal(conn: sqlite3.Connection, *, patience: float) -> None:
    """Switch the file to WAL. Two processes opening a new cache at once race to convert
    it, and SQLite answers the loser "database is locked" at once — the busy timeout does
    not cover a journal-mode change — so it asks again until the winner is done (the mode
    is then already WAL: a no-op)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


CACHE_ENV = "CUER_CACHE"
PROJECT_CACHE = Path(".cuer-cache") / "responses.sqlite"
"""The default cache, relative to the directory a command runs in (the project)."""


def default_cache_path() -> Path:
    """The response cache of a command given no `--cache`: the file `$CUER_CACHE` names if
    set, else the project's `./.cuer-cache/responses.sqlite` under the working directory,
    made absolute (a worker process started elsewhere opens the same file). Per project,
    not per machine: one project's runs are not answered from another's replies."""
    named = os.environ.get(CACHE_ENV)
    return Path(named).expanduser() if named else Path.cwd() / PROJECT_CACHE


class ResponseCache:
    """SQLite-backed map from `cache_key` to `CachedReply`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout=30000")
        _enable_wal(self._conn, patience=30.0)
        # WAL + NORMAL: a crash of the process never loses a committed reply; only a power
        # loss could drop the last few, which the cache simply re-requests.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, skill TEXT, "
            "text TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, error TEXT, "
            "retries INTEGER DEFAULT 0)"
        )
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(replies)")}
        if "retries" not in columns:  # a cache written by an older version
            self._conn.execute("ALTER TABLE replies ADD COLUMN retries INTEGER DEFAULT 0")
        # The in-memory front: a stored reply never changes (rows are only inserted),
        # so one read or written here is served from memory afterwards. Misses always
        # ask the file, which another process may have filled meanwhile.
        self._known: LRU[str, CachedReply] = LRU(MEMORY_ENTRIES)
        self._stored = self._conn.total_changes

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                return known
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, error, retries FROM replies "
                "WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            reply = CachedReply(row[0], row[1], row[2], row[3] or "", row[4] or 0)
            self._known.put(key, reply)
            return reply

    def put(self, key: str, skill: str, reply: CachedReply) -> None:
        # INSERT OR IGNORE: two workers racing on one request store the same reply once.
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO replies (key, skill, text, prompt_tokens, "
                "completion_tokens, error, retries) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, skill, reply.text, reply.prompt_tokens, reply.completion_tokens,
                 reply.error, reply.retries))
            if self._conn.total_changes != self._stored:  # ours; else another's stands
                self._stored = self._conn.total_changes
                self._known.put(key, reply)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    # Pickled as its path: a worker process opens its own connection to the same file.
    def __getstate__(self) -> dict[str, object]:
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


PARSE_FAILURE_FLAG = 0.05
"""A run whose skill replies fail to parse more often than this is flagged (the console
table, a report caveat): its traces measure the model's output format as much as the
agent."""


@dataclass
class SkillCounts:
    calls: int = 0
    """Requests answered by the backend (cache misses)."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    parse_failures: int = 0
    """Skill outcomes that stayed invalid after the repair retry (served or cached)."""
    cut: int = 0
    """Replies cut at their output-token bound (served or cached), repaired or not."""
    repaired: int = 0
    """Of those, the ones closed after the last field they completed and valid."""
    errors: int = 0
    """Requests that failed for good (transport errors after all retries)."""
    reused: int = 0
    """Requests not made again because the executor reused a repeated execution whole
    (each would have been a cache hit, or a call to the deterministic offline reader)."""


@dataclass
class Ledger:
    """What a run spent, per skill; thread-safe."""

    by_skill: dict[str, SkillCounts] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, skill: str, **counts: float) -> None:
        with self._lock:
            entry = self.by_skill.setdefault(skill, SkillCounts())
            for name, value in counts.items():
                setattr(entry, name, getattr(entry, name) + value)

    def take(self) -> dict[str, SkillCounts]:
        """The counts so far, and start again from zero: a worker process hands over
        what it spent since it last reported."""
        with self._lock:
            taken, self.by_skill = self.by_skill, {}
        return taken

    def merge(self, counts: dict[str, SkillCounts]) -> None:
        """Add another ledger's counts (a worker's, reported with its results)."""
        for skill, entry in counts.items():
            self.add(skill, **asdict(entry))

    def total(self, name: str) -> float:
        with self._lock:
            total: float = sum(getattr(c, name) for c in self.by_skill.values())
        return total

    def to_dict(self, *, timings: bool = True) -> JsonObject:
        """Totals plus a per-skill breakdown. `timings=False` drops latency, for fields
        that must compare equal across runs."""
        with self._lock:
            skills = {name: asdict(c) for name, c in sorted(self.by_skill.items())}
        totals: dict[str, float] = {}
        for counts in skills.values():
            for key, value in counts.items():
                totals[key] = totals.get(key, 0) + value
        if not skills:
            totals = asdict(SkillCounts())
        totals["tokens"] = totals["prompt_tokens"] + totals["completion_tokens"]
        requests = totals["calls"] + totals["cache_hits"]
        totals["parse_failure_rate"] = (round(totals["parse_failures"] / requests, 6)
                                        if requests else 0.0)
        if not timings:
            totals.pop("latency_s")
            for counts in skills.values():
                counts.pop("latency_s")
        else:
            totals["latency_s"] = round(totals["latency_s"], 3)
        return {**totals, "by_skill": skills}

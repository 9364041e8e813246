"""Backend protocol, registry, and `SkillClient` — the one door every skill call goes through.

A backend turns a skill request into a reply. `SkillClient` wraps any backend with the
response cache and the call ledger, validates the reply against the skill's response
model, and reports a `SkillResult` whose `status` says what happened:

* ``ok`` — a valid response (from the server or the cache);
* ``parse_failure`` — the reply stayed invalid after the repair retry; the calling node
  records it as an outcome and the run continues;
* transport failures after all retries raise `BackendError`: the run records the
  example as failed with the reason and moves on.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from cuer_agent._json import JsonObject
from cuer_agent._lru import LRU
from cuer_agent._registry import About, Registry
from cuer_agent.errors import CuerError
from cuer_agent.llm.cache import CachedReply, Ledger, ResponseCache, cache_key
from cuer_agent.llm.skills import RESPONSES, reading_of
from cuer_agent.parallel import request_slot


class RequestLog(list[str]):
    """The cache keys of the requests made inside a `collect` block, in order, and what
    their replies took: retries (a cached reply reports the retries it took), tokens
    (a cached reply keeps its counts) and replies that stayed invalid."""

    retries: int = 0
    prompt_tokens: int = 0
    rereads: int = 0
    """Requests for an alternative reading (`ReadRequest.reading` > 0)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_skill: dict[str, Counter[str]] = {}
        """Per skill: `requests`, and of their replies `parse_failures`, `cut` (at the
        output-token bound), `repaired` (of those, closed into a valid reply) and
        `completion_tokens` — what a trace row's `spent.by_skill` records."""

    @property
    def completion_tokens(self) -> int:
        """Output tokens of the replies (summed from `by_skill`)."""
        return sum(c["completion_tokens"] for c in self.by_skill.values())

    @property
    def parse_failures(self) -> int:
        """Replies that stayed invalid (summed from `by_skill`)."""
        return sum(c["parse_failures"] for c in self.by_skill.values())

    def tally(self, skill: str, **counts: int) -> None:
        """Add `counts` to `skill`'s entry (made on first use)."""
        self.by_skill.setdefault(skill, Counter()).update(counts)

    def spent_by_skill(self) -> dict[str, dict[str, int]]:
        """`by_skill` as plain JSON, skills and counters in name order, zeros kept (every
        entry has the same keys)."""
        return {skill: {k: counts[k] for k in SPENT_BY_SKILL}
                for skill, counts in sorted(self.by_skill.items())}


SPENT_BY_SKILL = ("completion_tokens", "cut", "parse_failures", "repaired", "requests")
"""The per-skill counters of a trace row's `spent.by_skill`, in name order."""


_COLLECTOR: ContextVar[list[RequestLog] | None] = ContextVar("cuer_request_keys", default=None)
"""The key lists open in this context (nested `collect` blocks each get every key)."""


REPAIRED = "repaired: cut"
"""How a reply's error begins when it was cut at its output-token bound and closed after
the last field it completed (the reply is valid: `BackendReply.text` is set)."""
CUT = "hit max_tokens"
"""How a parse failure's error begins when the reply was cut at its bound and could not be
closed into a valid reply."""


class BackendError(CuerError):
    """A request failed for good (server down, retries exhausted)."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__(message)
        self.retries = retries
        """Retries spent before giving up (counted in the ledger)."""


@dataclass(frozen=True)
class BackendReply:
    """What a backend returns for one skill request."""

    text: str | None
    """Reply JSON that validated against the skill's response model; None = parse failure."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    error: str = ""
    """Why the reply is a parse failure (the validation message); for a valid reply, empty,
    or how it was repaired (`REPAIRED`)."""


@runtime_checkable
class Backend(Protocol):
    name: str
    model: str
    # A backend may also set `version: str` (part of the cache key): what changes its
    # replies besides the model name — the rule reader's hash of its rules and tables.
    # And it may offer alternative readings (the `reread` repair) by defining
    # `rereading(reading: int) -> JsonObject`: how it draws its `reading`-th alternative
    # reply to a read request (`ReadRequest.reading`), part of that request's cache key.

    def decoding(self) -> JsonObject:
        """Decoding parameters that shape the reply (part of the cache key)."""
        ...

    def render(self, skill: str, request: BaseModel) -> Any:
        """The exact, JSON-native input the backend will see (part of the cache key)."""
        ...

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        """Answer one request; raise `BackendError` on a transport failure."""
        ...


@dataclass(frozen=True)
class SkillResult:
    skill: str
    response: BaseModel | None
    status: str
    """ok | parse_failure"""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


PROMPT_ENTRIES = 4096
"""Rendered prompts a `SkillClient` keeps (with their cache keys), least recently used
forgotten first."""


class SkillClient:
    """Cache + ledger + validation around one backend."""

    def __init__(self, backend: Backend, *, cache: ResponseCache | None = None,
                 ledger: Ledger | None = None) -> None:
        self.backend = backend
        self.cache = cache
        self.ledger = ledger if ledger is not None else Ledger()
        self._in_flight: dict[str, threading.Event] = {}
        self._in_flight_lock = threading.Lock()
        self._prompts: LRU[str, tuple[Any, str]] = LRU(PROMPT_ENTRIES)
        self._prompts_lock = threading.Lock()

    # Pickled as its recipe (backend settings, cache path) for a worker process; the
    # worker starts a ledger of its own, whose counts travel back with its results
    # (`cuer_agent.parallel`).
    def __getstate__(self) -> dict[str, object]:
        return {"backend": self.backend, "cache": self.cache}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["backend"], cache=state["cache"])  # type: ignore[misc]

    @contextmanager
    def collect(self) -> Iterator[RequestLog]:
        """Collect the cache key of every request made inside the block (in this context —
        concurrent executions each see only their own). Distinct keys are the calls a cold
        cache needs: the design minimum, whatever the cache held."""
        keys = RequestLog()
        token = _COLLECTOR.set([*(_COLLECTOR.get() or []), keys])
        try:
            yield keys
        finally:
            _COLLECTOR.reset(token)

    @property
    def evidence_words(self) -> int | None:
        """The most words of one evidence item a request shows, when the backend declares
        a budget (a small context: `cuer_agent.llm.windows`); None shows every item whole."""
        words = getattr(self.backend, "evidence_words", None)
        return words if isinstance(words, int) else None

    @property
    def rereads(self) -> bool:
        """Whether the backend offers alternative readings of a read request's evidence
        (`ReadRequest.reading` > 0; it defines `rereading`)."""
        return callable(getattr(self.backend, "rereading", None))

    @property
    def repeatable(self) -> bool:
        """Whether asking the same request again gives the same reply: a response cache
        answers it, or the backend is deterministic by construction (the offline reader)."""
        return self.cache is not None or bool(getattr(self.backend, "deterministic", False))

    def replay(self, log: RequestLog) -> None:
        """Count the requests of `log` in every open `collect` block, as if they were made
        again here: a reused execution costs, in every log, what re-running it would. The
        ledger counts them as `reused`: not made, so neither calls nor cache hits."""
        for skill, counts in log.by_skill.items():
            self.ledger.add(skill, reused=counts["requests"])
        for keys in _COLLECTOR.get() or []:
            keys.extend(log)
            for skill, counts in log.by_skill.items():
                keys.tally(skill, **counts)
            keys.retries += log.retries
            keys.prompt_tokens += log.prompt_tokens
            keys.rereads += log.rereads

    def __call__(self, skill: str, request: BaseModel) -> SkillResult:
        rendered, key = self._prompt(skill, request)
        rereading = bool(reading_of(request))
        for keys in _COLLECTOR.get() or []:
            keys.append(key)
            keys.tally(skill, requests=1)
            keys.rereads += rereading
        if self.cache is None:
            return self._call_backend(skill, request, rendered, key)
        while True:
            stored = self.cache.get(key)
            if stored is not None:
                self.ledger.add(skill, cache_hits=1)
                return self._result(skill, stored, cached=True)
            # Single flight: concurrent forks often ask the same thing at once; one of
            # them asks the server, the others wait and read the cache — so a cold run
            # makes each distinct request once (the design minimum), at any concurrency.
            with self._in_flight_lock:
                waiting = self._in_flight.get(key)
                if waiting is None:
                    done = self._in_flight[key] = threading.Event()
            if waiting is not None:
                waiting.wait()
                continue  # cached now — or the other request failed: try ourselves
            try:
                stored = self.cache.get(key)  # finished between our look and our claim?
                if stored is None:
                    return self._call_backend(skill, request, rendered, key)
            finally:
                with self._in_flight_lock:
                    del self._in_flight[key]
                done.set()

    def _prompt(self, skill: str, request: BaseModel) -> tuple[Any, str]:
        """The backend's rendering of `request` and its cache key, made once per distinct
        request while it is among the last `PROMPT_ENTRIES`: forks and probes ask the same
        thing many times, and rendering (sorted, indented JSON) was most of what a
        repeated request cost. The request's own JSON names it: equal JSON, equal prompt
        (a backend renders from the skill and the request alone)."""
        reading = reading_of(request)
        name = f"{skill}\n{reading}\n{request.model_dump_json()}"
        with self._prompts_lock:
            made = self._prompts.get(name)
        if made is None:
            rendered = self.backend.render(skill, request)
            made = (rendered, cache_key(self.backend.name, self.backend.model, skill, rendered,
                                        self._decoding(reading),
                                        getattr(self.backend, "version", "")))
            with self._prompts_lock:
                self._prompts.put(name, made)
        return made

    def _decoding(self, reading: int) -> JsonObject:
        """The decoding parameters of a request: the backend's, and for an alternative
        reading (`ReadRequest.reading` > 0) how the backend draws it — a request for
        reading 0 keeps the key it always had. A backend without `rereading` cannot
        give one: `BackendError`, never its own reading passed off as another."""
        decoding = self.backend.decoding()
        if not reading:
            return decoding
        if not self.rereads:
            raise BackendError(f"backend {self.backend.name} offers no alternative readings "
                               f"(asked for reading {reading}; it defines no `rereading`)")
        return {**decoding, "rereading": self.backend.rereading(reading)}  # type: ignore[attr-defined]

    def _call_backend(self, skill: str, request: BaseModel, rendered: Any,
                      key: str) -> SkillResult:
        try:
            with request_slot():
                reply = self.backend.respond(skill, request, rendered)
        except BackendError as exc:
            self.ledger.add(skill, errors=1, retries=exc.retries)
            for log in _COLLECTOR.get() or []:
                log.retries += exc.retries
            raise
        self.ledger.add(skill, calls=1, prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens, latency_s=reply.latency_s,
                        retries=reply.retries)
        stored = CachedReply(reply.text, reply.prompt_tokens, reply.completion_tokens,
                             reply.error, reply.retries)
        if self.cache is not None:
            self.cache.put(key, skill, stored)
        return self._result(skill, stored, cached=False)

    def _result(self, skill: str, stored: CachedReply, *, cached: bool) -> SkillResult:
        result = self._parsed(skill, stored, cached=cached)
        cut = stored.error.startswith((REPAIRED, CUT))
        failed = result.status != "ok"
        for log in _COLLECTOR.get() or []:
            log.retries += stored.retries
            log.prompt_tokens += stored.prompt_tokens
            log.tally(skill, parse_failures=failed, cut=cut, repaired=cut and not failed,
                      completion_tokens=stored.completion_tokens)
        return result

    def _parsed(self, skill: str, stored: CachedReply, *, cached: bool) -> SkillResult:
        def result(response: BaseModel | None, status: str, error: str = "") -> SkillResult:
            return SkillResult(skill, response, status, error, cached=cached,
                               prompt_tokens=stored.prompt_tokens,
                               completion_tokens=stored.completion_tokens)

        cut = stored.error.startswith((REPAIRED, CUT))
        if cut:
            self.ledger.add(skill, cut=1, repaired=int(stored.text is not None))
        if stored.text is None:
            self.ledger.add(skill, parse_failures=1)
            return result(None, "parse_failure", stored.error)
        try:
            response = RESPONSES[skill].model_validate_json(stored.text)
        except ValidationError as exc:  # a stale cache entry from an older schema
            self.ledger.add(skill, parse_failures=1)
            return result(None, "parse_failure", str(exc).splitlines()[0])
        return result(response, "ok")


# --- registry ------------------------------------------------------------------------------

BackendFactory = Callable[..., Backend]
BACKENDS: Registry[BackendFactory] = Registry(
    "backend", "cuer_agent.backends",
    # by name, so that importing the protocol does not import HTTP clients
    builtins=("cuer_agent.llm.extractive_backend", "cuer_agent.llm.llamacpp_backend",
              "cuer_agent.llm.ollama_backend", "cuer_agent.llm.openai_backend"))


@dataclass(frozen=True)
class BackendAbout(About):
    """What a backend declares when it registers (`register_backend`)."""

    concurrency: int = 4
    """Requests in flight when --concurrency is not given: 1 for CPU-bound work in this
    process (a rule reader, an in-process model with one slot), a few for a local server,
    many for a server built to batch (vLLM, hosted APIs)."""
    rule_based: bool = False
    """An offline, deterministic rule-based stand-in, not a language model: it takes no
    decoding options (seed, timeout, max tokens...), and a method run on it is reported
    as a stand-in for the method it is named after."""
    threads: bool = False
    """Takes --threads: CPU threads of a model run in this process."""


def register_backend(name: str, *, help: str = "", concurrency: int = 4,
                     rule_based: bool = False, threads: bool = False
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: `@register_backend("name", help=..., ...)` on a factory `(model=,
    base_url=, **kw)`; the keywords are the backend's `BackendAbout`."""
    return BACKENDS.register(name, BackendAbout(help=help, concurrency=concurrency,
                                                rule_based=rule_based, threads=threads))


def backend_names() -> list[str]:
    return BACKENDS.names()


def backend_about(name: str) -> BackendAbout:
    """What backend `name` declared (the defaults for an undeclared or unknown name)."""
    return BACKENDS.about(name, BackendAbout)


def default_concurrency(backend: str) -> int:
    """Requests in flight for `backend` when --concurrency is not given."""
    return backend_about(backend).concurrency


def backend_help(default: str | None = None) -> str:
    """The registered backends with what each is, for help texts (`default` marked)."""
    return BACKENDS.choices(BackendAbout, default)


def concurrency_help() -> str:
    """Each backend's default concurrency, for help texts: ``extractive 1, ...``."""
    return ", ".join(f"{name} {default_concurrency(name)}" for name in backend_names())


def make_backend(name: str, **options: Any) -> Backend:
    """Build a registered backend; unknown name → `ConfigError` listing the known ones."""
    return BACKENDS.get(name)(**options)

"""What the Ollama and OpenAI-compatible backends share: retries, the repair turn, parsing.

A remote backend only has to say how to send one chat request (`_send`) and how to
classify its exceptions (`_classify`). This base class adds:

* retries with exponential backoff on 408/409/5xx, timeouts and refused connections,
  honouring a server's `retry-after` (capped) — the client libraries' own retries are
  switched off so that every retry is counted in the ledger;
* rate limits (429) slow the run down instead of failing it: they do not use up the
  attempts, only a patience budget, and every request of the backend pauses until the
  server's cooldown is over (so 16 threads don't hammer a server that asked for a break);
* JSON validation against the skill's response model, one repair turn on an invalid
  reply, then a recorded parse failure (never an exception, never a silent NaN);
* bounded generations: every skill has a maximum number of output tokens (`max_tokens`,
  sized to its reply schema), and a reply cut at that limit is a parse failure with the
  reason "hit max_tokens" (no repair turn: it would be cut again); a timeout per request;
* thinking output off by default (`think=False`), the schema sent as strict;
* a server that rejects a decoding parameter (temperature, seed, max_tokens, think) stops
  the run with one line naming the option to change (`omit`), not four retries;
* usage accounting (prompt/completion tokens, latency).
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from cuer_agent._json import JsonObject
from cuer_agent.errors import ConfigError
from cuer_agent.llm import bounds, prompts
from cuer_agent.llm.backends import CUT, REPAIRED, BackendError, BackendReply
from cuer_agent.llm.skills import RESPONSES, reading_of

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
SKILLS = ("plan", "read", "answer", "judge", "check", "blame", "verdict")
"""The skills whose output tokens `[backend.max_tokens]` may bound."""
DEFAULT_TIMEOUT = 120.0
"""Seconds one request may take: a CPU model or a busy server needs more than a GPU one."""
OMITTABLE = ("temperature", "seed", "max_tokens", "think")
"""Decoding parameters a server may reject; `omit` leaves them out of every request."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before a request fails for good."""

    max_attempts: int = 4
    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 8.0
    max_retry_after: float = 60.0
    """Longest server-requested wait (`retry-after`) we honour."""
    rate_limit_patience: float = 600.0
    """Seconds one request may spend waiting out 429s before it fails; 429s do not count
    against `max_attempts`."""
    max_rate_limit_retries: int = 200
    """A bound for servers that answer 429 with `retry-after: 0` forever."""

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return min(self.initial_interval * self.backoff_factor ** attempt, self.max_interval)


@dataclass(frozen=True)
class Sent:
    """One raw chat reply."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    truncated: bool = False
    """The generation stopped at the output-token limit."""


REREAD_TEMPERATURE = 0.7
"""The temperature of an alternative reading (`ReadRequest.reading` > 0): another sample
of the same prompt; the backend's own temperature (0 by default) draws reading 0."""


@dataclass(frozen=True)
class Sampling:
    """How one request is sampled: the backend's temperature and seed for reading 0; for
    the k-th alternative reading, `REREAD_TEMPERATURE` and the seed + k (`rereading`)."""

    temperature: float
    seed: int


@dataclass(frozen=True)
class Failure:
    """A classified transport failure."""

    retryable: bool
    reason: str
    retry_after: float | None = None
    rate_limited: bool = False
    """HTTP 429: wait and retry without using up an attempt."""
    rejected: str = ""
    """The decoding parameter the server refused (a configuration error, not retried)."""


class Cooldown:
    """A pause shared by every request of one backend, set by a rate-limit reply."""

    def __init__(self) -> None:
        self._until = 0.0
        self._lock = threading.Lock()

    def hold(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def remaining(self) -> float:
        with self._lock:
            return max(0.0, self._until - time.monotonic())


class RemoteBackend(ABC):
    name: str = "remote"

    def __init__(self, model: str, *, seed: int = 42, temperature: float = 0.0,
                 timeout: float = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None,
                 max_tokens: Mapping[str, int] | None = None, think: bool = False,
                 omit: Sequence[str] = ()) -> None:
        try:
            self.omit = omitted(omit)
        except ValueError as exc:
            raise ConfigError(f"[backend] omit: {exc}") from None
        self.model = model
        self.seed = seed
        self.temperature = temperature
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.max_tokens = dict(max_tokens or {})
        """Output tokens per skill the user set; the rest are derived from each request's
        bounded reply schema (`cuer_agent.llm.bounds.token_bound`)."""
        self.think = think
        self._sleep = time.sleep  # replaced in tests
        self._cooldown = Cooldown()

    # -- pickling: the constructor's arguments, never the live client or the API key ------
    # A worker process rebuilds the client (a concrete backend's __init__ takes
    # `base_url=`) and reads the key from its own environment.
    def __getstate__(self) -> dict[str, object]:
        return {"model": self.model, "base_url": getattr(self, "base_url", None),
                "seed": self.seed, "temperature": self.temperature, "timeout": self.timeout,
                "retry": self.retry, "max_tokens": self.max_tokens, "think": self.think,
                "omit": self.omit}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- what a concrete backend provides ------------------------------------------------
    @abstractmethod
    def _send(self, messages: list[dict[str, str]], schema: JsonObject,
              max_tokens: int, sampling: Sampling) -> Sent: ...

    @abstractmethod
    def _classify(self, exc: Exception) -> Failure | None:
        """Map a client exception to a Failure; None = not a transport error (re-raise)."""

    @abstractmethod
    def check(self) -> None:
        """Fail fast (ConfigError) when the server is unreachable or lacks the model."""

    # -- Backend protocol ----------------------------------------------------------------
    def decoding(self) -> JsonObject:
        """What shapes a reply, so the response cache keys on it."""
        return {"temperature": self.temperature, "seed": self.seed,
                "max_tokens": dict(sorted(self.max_tokens.items())), "think": self.think,
                "omit": list(self.omit), "bounds": bounds.VERSION}

    def rereading(self, reading: int) -> JsonObject:
        """The sampling policy of the `reading`-th alternative reading (in its cache key)."""
        drawn = self.sampling(reading)
        return {"reading": reading, "temperature": drawn.temperature, "seed": drawn.seed}

    def sampling(self, reading: int = 0) -> Sampling:
        """How the request for reading `reading` is sampled (`Sampling`)."""
        if not reading:
            return Sampling(self.temperature, self.seed)
        return Sampling(REREAD_TEMPERATURE, self.seed + reading)

    def sends(self, parameter: str) -> bool:
        """Does every request carry this decoding parameter (not omitted)?"""
        return parameter not in self.omit

    def render(self, skill: str, request: BaseModel) -> Any:
        return prompts.render(skill, request)

    def limit(self, skill: str, schema: JsonObject) -> int:
        """Output tokens of one request: the user's for the skill, else the bound its
        reply schema implies (a grammar-constrained reply always closes before it)."""
        return self.max_tokens.get(skill) or bounds.token_bound(schema)

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        messages: list[dict[str, str]] = list(rendered)
        ids = bounds.ids_in_view(skill, request)
        enums = bounds.enums_in_view(skill, request)
        schema = prompts.reply_schema(skill, ids, enums)
        started = time.perf_counter()
        usage = [0, 0]
        retries = 0
        error = ""
        limit = self.limit(skill, schema)
        sampling = self.sampling(reading_of(request))
        for turn in range(2):  # the reply, then at most one repair turn
            try:
                sent, used_retries = self._send_with_retries(messages, schema, limit,
                                                             sampling)
            except BackendError as exc:
                exc.retries += retries  # the repair turn's failure also counts the first's
                raise
            retries += used_retries
            usage[0] += sent.prompt_tokens
            usage[1] += sent.completion_tokens
            if sent.truncated:  # closed from the fields it completed; a turn would be cut too
                text, error = _closed(skill, sent.text, ids, limit, enums)
                break
            text, error = _validate(skill, sent.text, ids, enums)
            if text is not None:
                break
            if turn == 0:
                messages = [*messages, {"role": "assistant", "content": sent.text},
                            prompts.repair_message(error)]
        return BackendReply(text=text, prompt_tokens=usage[0], completion_tokens=usage[1],
                            latency_s=time.perf_counter() - started, retries=retries,
                            error=error if text is None or error.startswith(REPAIRED) else "")

    def _send_with_retries(self, messages: list[dict[str, str]], schema: JsonObject,
                           max_tokens: int, sampling: Sampling) -> tuple[Sent, int]:
        """(reply, retries). Failures use up `max_attempts`; rate limits only patience."""
        failures = rate_limits = 0
        waited = 0.0
        just_waited = False
        while True:
            pause = 0.0 if just_waited else self._cooldown.remaining()
            if pause > 0:  # another request was told to back off: so are we
                self._sleep(pause)
            just_waited = False
            try:
                return (self._send(messages, schema, max_tokens, sampling),
                        failures + rate_limits)
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
                if failure.rejected:
                    name = failure.rejected
                    raise ConfigError(
                        f"backend {self.name}: model {self.model!r} rejects `{name}` "
                        f"({failure.reason}); pass --omit {name} (or [backend] omit = "
                        f"[\"{name}\"] in a --config file)") from None
                if (failure.rate_limited and waited < self.retry.rate_limit_patience
                        and rate_limits < self.retry.max_rate_limit_retries):
                    wait = self.retry.wait(rate_limits, failure.retry_after)
                    rate_limits += 1
                    waited += wait
                    self._cooldown.hold(wait)
                    self._sleep(wait)
                    just_waited = True
                    continue
                failures += 1
                if not failure.retryable or failures == self.retry.max_attempts:
                    raise BackendError(
                        f"{self.name} request failed after {failures + rate_limits} "
                        f"attempt(s): {failure.reason}",
                        retries=failures + rate_limits - 1) from None
                self._sleep(self.retry.wait(failures - 1, failure.retry_after))
                just_waited = True


def _closed(skill: str, text: str, ids: Sequence[str], limit: int,
            enums: Mapping[str, Sequence[Any]] | None = None) -> tuple[str | None, str]:
    """A reply cut at `limit` tokens, closed after the last field it completed: (canonical
    JSON, how it was repaired) when that holds every decisive field and validates, else
    (None, why it is a parse failure)."""
    fields = bounds.close_cut(text)
    if fields is None:
        return None, f"{CUT} ({limit} for {skill})"
    missing = bounds.missing(skill, fields)
    closed, why = ((None, f"it lacks {missing}") if missing
                   else _validate(skill, json.dumps(fields), ids, enums))
    if closed is None:
        return None, f"{CUT} ({limit} for {skill}); closed, it is still invalid: {why}"
    return closed, (f"{REPAIRED} at max_tokens ({limit} for {skill}): closed after the last "
                    "field it completed")


def _validate(skill: str, text: str, ids: Sequence[str] = (),
              enums: Mapping[str, Sequence[Any]] | None = None) -> tuple[str | None, str]:
    """(canonical JSON, "") for a valid reply within its bounds (`bounds.violation`),
    else (None, the first problem)."""
    candidate = _strip_fences(text)
    try:
        model = RESPONSES[skill].model_validate_json(candidate)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "reply"
        return None, f"{loc}: {first['msg']}"
    reply = model.model_dump(mode="json")
    broken = bounds.violation(skill, reply, ids, enums)
    if broken:
        return None, broken
    return json.dumps(reply, sort_keys=True), ""


def _strip_fences(text: str) -> str:
    """Accept a reply wrapped in a ```json fence — a common small-model habit."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped.strip()


def omitted(names: Iterable[str]) -> tuple[str, ...]:
    """The decoding parameters to leave out, sorted; ValueError naming an unknown one."""
    unknown = sorted(set(names) - set(OMITTABLE))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown}; choose from {', '.join(OMITTABLE)}")
    return tuple(sorted(set(names)))


def rejected_parameter(message: str) -> str:
    """The decoding parameter a 400 reply says the model does not support, else ""."""
    lowered = message.lower()
    if not any(w in lowered for w in ("unsupported", "not supported", "does not support",
                                      "invalid", "unknown", "unrecognized")):
        return ""
    names = {"temperature": "temperature", "seed": "seed", "max_tokens": "max_tokens",
             "max_completion_tokens": "max_tokens", "num_predict": "max_tokens",
             "enable_thinking": "think", "chat_template_kwargs": "think", "think": "think"}
    for word, parameter in names.items():
        if word in lowered:
            return parameter
    return ""


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` / `retry-after` headers, if present and numeric."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except (TypeError, ValueError):
            continue
    return None

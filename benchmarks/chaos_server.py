"""A chaos OpenAI-compatible chat server on 127.0.0.1: a model that misbehaves on purpose.

It answers `POST /v1/chat/completions` and `GET /v1/models` like `latency_server`, but a
configurable share of requests (default 30%) is faulty, the fault drawn at random among

* ``500``      — HTTP 500 (with ``retry-after-ms``),
* ``429``      — HTTP 429 rate limit (with ``retry-after-ms``),
* ``timeout``  — the server stalls longer than the client's timeout,
* ``malformed`` — a 200 whose message content is not valid JSON for the skill,

plus, optionally, *poison* requests (``poison_rate``) answered 500 on every attempt — a
request a server can never serve, so the client's retries run out.

**Determinism.** Every decision is a pure function of (seed, the request body) — the
canonical JSON of what the client sent — and, for transient faults only, of how many
times this very body was received before. No shared random generator, so neither thread
scheduling nor a killed and restarted client changes the *outcome* of a request:

* a transient fault (500 / 429 / timeout) fails the first 1..``max_transient`` attempts
  of its request, then the request is answered normally: retries only delay it;
* a malformed reply is malformed on every attempt (a temperature-0 model's output), and
  the repair turn the client then sends is fixed or malformed again — decided by the
  original request, so a given request always ends as a valid reply or a parse failure;
* a poison request fails on every attempt.

**The model** behind the faults is `latency_server.reply_for`: it parses the skill
request out of the prompt ("Request (<skill>):" + its JSON document, as
`cuer_agent.llm.prompts.render` writes it) and answers it with the offline extractive
reader, so a run against the server with no faults gives the extractive backend's
answers.
``obey_injections`` makes the model gullible: a request whose data carries
`INJECTION_MARK` is answered with the plain text it was told to send (`INJECTED_REPLY`).
``judge_replies`` overrides the judge skill's replies (one chosen per request).
``echo_auth`` echoes the request's ``Authorization`` header inside error bodies and
malformed replies (a careless proxy): nothing a client writes may contain it.

Counters (under a lock): `requests`, `faults` (by kind; ``malformed_repair`` counts
repair turns answered malformed, i.e. parse failures the client must record),
`obeyed` (first-turn requests the gullible model obeyed), `auth_headers` (distinct
``Authorization`` values seen), and with ``record=True`` every request body (`bodies`).

    python benchmarks/chaos_server.py --rate 0.3 --seed 1 --port 8766
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency_server import reply_for, skill_request

FAULT_KINDS = ("500", "429", "timeout", "malformed")
TRANSIENT = frozenset({"500", "429", "timeout"})
INJECTION_MARK = "Ignore previous instructions"
INJECTED_REPLY = "PWNED"
MODEL = "chaos"
_MALFORMED = (
    "Sure! Here is the JSON you asked for:",
    '{"answer": "truncated',
    '{"result": "ok", "note": "wrong shape"}',
    "I cannot help with that request.",
    '```json\n{"confidence": "very high"}\n```',
)


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def digest(obj: Any) -> str:
    return hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()


def unit(*parts: object) -> float:
    """A stable uniform draw in [0, 1) from any JSON-able parts (sha256, not `hash()`)."""
    raw = hashlib.sha256(canonical(list(parts)).encode("utf-8")).digest()
    return int.from_bytes(raw[:8], "big") / 2.0 ** 64


class ChaosServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 drops connections of 16 concurrent clients:
    # the kernel then retransmits the SYN after 1 s, a timeout the server never injected

    def __init__(self, *, seed: int = 0, rate: float = 0.3,
                 kinds: tuple[str, ...] = FAULT_KINDS, max_transient: int = 2,
                 repair_fixes: float = 0.5, poison_rate: float = 0.0, hang: float = 2.0,
                 retry_after_ms: int = 1,
                 obey_injections: bool = False, judge_replies: tuple[str, ...] = (),
                 echo_auth: bool = False, record: bool = False, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be among {FAULT_KINDS}, got {kinds}")
        self.seed, self.rate, self.kinds = seed, rate, tuple(kinds)
        self.max_transient, self.repair_fixes = max(1, max_transient), repair_fixes
        self.poison_rate, self.hang, self.retry_after_ms = poison_rate, hang, retry_after_ms
        self.obey_injections, self.judge_replies = obey_injections, tuple(judge_replies)
        self.echo_auth, self.record = echo_auth, record
        self.requests = 0
        self.faults: Counter[str] = Counter()
        self.obeyed = 0
        self.auth_headers: set[str] = set()
        self.bodies: list[dict[str, Any]] = []
        """Every chat request body, in arrival order (when `record`)."""
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> Self:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.01},
                         daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes stalled "timeout" handlers
        self.shutdown()
        self.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out closed the socket under a stalled handler: stay quiet."""

    def reset(self, *, rate: float | None = None, poison_rate: float | None = None) -> None:
        """Forget counters and attempts (and optionally change the fault rates) between runs
        that must share one URL: a run's config records the server's URL."""
        with self._lock:
            self.rate = self.rate if rate is None else rate
            self.poison_rate = self.poison_rate if poison_rate is None else poison_rate
            self.requests, self.obeyed = 0, 0
            self.faults.clear()
            self._seen.clear()
            self.bodies.clear()

    def most_attempts(self) -> int:
        """The most times any one request body was received (its attempts)."""
        with self._lock:
            return max(self._seen.values(), default=0)

    def counts(self) -> dict[str, int]:
        """Faults injected so far, by kind (every kind listed, zeros included)."""
        with self._lock:
            return {k: self.faults.get(k, 0)
                    for k in (*FAULT_KINDS, "malformed_repair", "poison")}

    # -- decisions (pure functions of seed, body and attempt) ------------------------------
    def kind_of(self, key: str) -> str | None:
        """The fault drawn for the body with digest `key`: poison, a kind, or None."""
        if unit(self.seed, "poison", key) < self.poison_rate:
            return "poison"
        if unit(self.seed, "fault", key) < self.rate:
            return self.kinds[int(unit(self.seed, "kind", key) * len(self.kinds))]
        return None

    def decide(self, body: dict[str, Any], attempt: int) -> str | None:
        """The fault for this attempt at this body, or None (answer normally)."""
        messages = body.get("messages", [])
        key = digest(body)
        repair = len(messages) > 2  # our client's repair turn: [system, user, assistant, user]
        kind = self.kind_of(key)
        if kind == "poison":
            return kind
        if kind in TRANSIENT:
            if attempt < 1 + int(unit(self.seed, "times", key) * self.max_transient):
                return kind
        elif kind == "malformed" and not repair:
            return kind
        if repair:  # fixed or malformed again, decided by the original request
            base = digest({**body, "messages": messages[:2]})
            if (self.kind_of(base) == "malformed"
                    and unit(self.seed, "repair", base) >= self.repair_fixes):
                return "malformed_repair"
        return None

    def content(self, body: dict[str, Any], auth: str) -> str:
        """What the model says (no fault)."""
        messages = body.get("messages", [])
        found = skill_request(messages)
        if self.obey_injections and found and INJECTION_MARK in canonical(found[1]):
            if len(messages) <= 2:
                with self._lock:
                    self.obeyed += 1
            return INJECTED_REPLY
        if found and found[0] == "judge" and self.judge_replies:
            pick = int(unit(self.seed, "judge", digest(body)) * len(self.judge_replies))
            return self.judge_replies[pick]
        return reply_for(messages)

    def malformed(self, body: dict[str, Any], auth: str) -> str:
        text = _MALFORMED[int(unit(self.seed, "malformed", digest(body)) * len(_MALFORMED))]
        return f"{text} {auth}" if self.echo_auth else text


class _Handler(BaseHTTPRequestHandler):
    server: ChaosServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the reply

    def do_GET(self) -> None:  # /v1/models
        self._send(200, {"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 0, "owned_by": "chaos"}]})

    def do_POST(self) -> None:  # /v1/chat/completions
        srv = self.server
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw or b"{}")
        auth = self.headers.get("authorization", "")
        with srv._lock:
            srv.requests += 1
            srv.auth_headers.add(auth)
            if srv.record:
                srv.bodies.append(body)
            key = digest(body)
            attempt = srv._seen[key]
            srv._seen[key] += 1
        fault = srv.decide(body, attempt)
        if fault is not None:
            with srv._lock:
                srv.faults[fault] += 1
        wait = {"retry-after-ms": str(srv.retry_after_ms)}
        message = "chaos: injected failure" + (f" (request auth: {auth})" if srv.echo_auth
                                               else "")
        if fault in ("500", "poison"):
            self._send(500, _error(500, message), wait)
            return
        if fault == "429":
            self._send(429, _error(429, "chaos: rate limited. " + message), wait)
            return
        if fault == "timeout":
            if srv._stopping.wait(srv.hang):
                return
            self._send(200, _completion(body, srv.content(body, auth)))
            return
        text = (srv.malformed(body, auth) if fault in ("malformed", "malformed_repair")
                else srv.content(body, auth))
        self._send(200, _completion(body, text))


def _error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "chaos", "param": None, "code": str(status)}}


def _completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-" + digest(body)[:12], "object": "chat.completion", "created": 0,
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


# -- the client side: a CLI whose OpenAI backend gives up quickly -------------------------------

def fast_openai_factory(timeout: float, retry: Any = None) -> Callable[..., Any]:
    """The `openai` backend factory with a short client timeout (and a retry policy): the
    CLI has no timeout flag, and a 60 s timeout would make a stalled request cost a minute."""
    from cuer_agent.llm.openai_backend import make_openai

    def factory(**options: Any) -> Any:
        options = {**options, "timeout": timeout}
        if retry is not None:
            options["retry"] = retry
        return make_openai(**options)

    return factory


@contextmanager
def fast_openai(timeout: float, retry: Any = None) -> Iterator[None]:
    """Within the block, `make_backend("openai", ...)` builds fast-failing backends."""
    from cuer_agent.llm import backends

    saved = backends.BACKENDS.get("openai")  # loads the built-ins first
    backends.BACKENDS.add("openai", fast_openai_factory(timeout, retry))
    try:
        yield
    finally:
        backends.BACKENDS.add("openai", saved)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--poison-rate", type=float, default=0.0)
    parser.add_argument("--hang", type=float, default=2.0)
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    # Ctrl-C stops it even when a non-interactive shell started it in the background
    # (which starts a job with SIGINT ignored, and Python keeps an ignored SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = ChaosServer(seed=args.seed, rate=args.rate, poison_rate=args.poison_rate,
                         hang=args.hang, port=args.port)
    print(f"serving {server.url} (model {MODEL!r}) with fault rate {args.rate:.0%}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(json.dumps(server.counts()))


if __name__ == "__main__":
    main()

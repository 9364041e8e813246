"""Fake LLM servers on 127.0.0.1 for offline protocol tests.

Two servers, both a stdlib `http.server.ThreadingHTTPServer` bound to port 0 and served
from a daemon thread, each speaking just enough of one wire protocol for the official
client library to accept its replies:

* `FakeOpenAIServer` — the OpenAI chat-completions protocol:
  ``POST /v1/chat/completions`` and ``GET /v1/models``;
* `FakeOllamaServer` — the Ollama protocol: ``POST /api/chat`` (non-streaming) and
  ``GET /api/tags`` (what ``ollama.Client.list()`` reads).

Knobs (all plain attributes, safe to set between requests):

* a scripted queue of per-request `Behaviour`\\ s (`FakeServer.script`): each request, on
  any path, pops the next one — an HTTP status with an optional ``retry-after`` header,
  a delay in seconds, the reply content text and whether it was cut at the token limit —
  or a dropped connection, or a raw body that is not the protocol at all. When the queue
  is empty a request is answered with status 200 and, for chat requests, the default
  reply;
* `FakeServer.reply_fn` — the default reply: a function of the decoded request body
  returning the assistant's content text. The default, `hashed_skill_reply`, returns a
  valid JSON object for the skill whose schema was sent, with strings derived from a
  hash of the request, so the same request always gets the same reply (forks are
  deterministic) and different requests get different ones;
* `FakeServer.models` — the model names the listing endpoint offers;
* `FakeServer.usage` — the (prompt, completion) token counts each chat reply reports.

Every request is recorded in `FakeServer.requests` (method, path, headers, decoded JSON
body) in arrival order. Delays wait on an event that `FakeServer.stop` sets, so
shutting down never waits for a sleeping handler.

Use as a context manager, or through the ``openai_server`` / ``ollama_server`` pytest
fixtures in ``tests/conftest.py``::

    with FakeOpenAIServer() as server:
        server.script(Behaviour(status=429, retry_after="0"), Behaviour(content="{}"))
        ...  # point a client at server.url
        assert len(server.chat_requests) == 2
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

ReplyFn = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Behaviour:
    """How the server answers one request."""

    status: int = 200
    """HTTP status; anything but 2xx is sent as the protocol's error body."""
    content: str | None = None
    """Assistant content text for a chat reply; None = use the server's `reply_fn`."""
    delay: float = 0.0
    """Seconds to wait before answering (to provoke client timeouts)."""
    retry_after: str | None = None
    """Value of a ``retry-after`` header, if any."""
    error: str = "injected error"
    """Message in the error body of a non-2xx reply."""
    drop: bool = False
    """Close the connection without sending any reply (a crashed or restarted server)."""
    raw: bytes | None = None
    """Send these bytes as the body instead of a protocol reply (a wrong endpoint)."""
    content_type: str = "application/json"
    """Content type sent with `raw`."""
    truncated: bool = False
    """The generation stopped at the token limit (`finish_reason` / `done_reason`
    "length")."""


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: dict[str, Any] | None
    """The decoded JSON body; None for a request without one."""


def request_digest(body: dict[str, Any] | None) -> str:
    """A short, stable hash of a request body (canonical JSON)."""
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def sent_schema(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a chat request carried (OpenAI `response_format` or Ollama `format`)."""
    if not body:
        return None
    fmt = body.get("response_format")
    if isinstance(fmt, dict):
        schema = fmt.get("json_schema", {}).get("schema")
        return schema if isinstance(schema, dict) else None
    schema = body.get("format")
    return schema if isinstance(schema, dict) else None


def hashed_skill_reply(body: dict[str, Any]) -> str:
    """A valid reply for the skill whose response schema the request carried.

    Keyed on a hash of the whole request: identical requests get identical replies.
    Unknown schemas get ``{"echo": <hash>}``.
    """
    tag = request_digest(body)
    schema = sent_schema(body) or {}
    title = schema.get("title", "")
    shown = schema.get("properties", {})
    replies: dict[str, dict[str, Any]] = {
        "PlanResponse": {"action": "search", "subquery": f"q-{tag}", "reason": tag},
        "ReadResponse": {"selected_ids": [], "finding": f"f-{tag}", "support": "partial",
                         "confidence": 0.5, "reason": tag},
        "AnswerResponse": {"answer": f"a-{tag}", "confidence": 0.75, "used_ids": [],
                           "rationale": tag},
        "JudgeResponse": {"stage": "retrieval", "hop": 1, "rationale": tag},
        "CheckResponse": {"consistent": True, "hops": [], "reason": tag},
        # the step judge: the first step and agent its schema allows
        "BlameResponse": {"step": (shown.get("step", {}).get("enum") or [0])[0],
                          "agent": (shown.get("agent", {}).get("enum") or ["agent"])[0],
                          "reason": tag},
        "VerdictResponse": {"decisive": False, "reason": tag},
    }
    return json.dumps(replies.get(title, {"echo": tag}))


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        self.server.owner._handle(self)

    def do_POST(self) -> None:
        self.server.owner._handle(self)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out close the socket under a sleeping handler; stay quiet."""


class FakeServer:
    """Base class: the HTTP plumbing, the script queue and the request record."""

    chat_path: ClassVar[str] = ""
    list_path: ClassVar[str] = ""

    def __init__(self, *, reply_fn: ReplyFn = hashed_skill_reply,
                 models: tuple[str, ...] = ("test-model",),
                 usage: tuple[int, int] = (11, 7)) -> None:
        self.reply_fn = reply_fn
        self.models = models
        self.usage = usage
        self._defaults = (reply_fn, models, usage)
        self.requests: list[Received] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.01}, daemon=True)

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` — no path; the backends add theirs."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs and records ---------------------------------------------------------------
    def reset(self) -> None:
        """Forget recorded requests and queued behaviours; restore the default knobs."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.reply_fn, self.models, self.usage = self._defaults

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order (any path)."""
        with self._lock:
            self._queue.extend(behaviours)

    @property
    def chat_requests(self) -> list[Received]:
        """Recorded chat requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path == self.chat_path]

    # -- protocol ------------------------------------------------------------------------
    def chat_reply(self, body: dict[str, Any], content: str, *,
                   truncated: bool = False) -> dict[str, Any]:
        """The reply to chat request `body` saying `content`: finish reason "length" when
        `truncated` (the generation hit max_tokens), else "stop"; token counts `usage`."""
        return self.chat_body(body, content, "length" if truncated else "stop", *self.usage)

    def chat_body(self, body: dict[str, Any], content: str, finish: str,
                  prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        """The protocol's chat reply, all of it given."""
        raise NotImplementedError

    def list_reply(self) -> dict[str, Any]:
        raise NotImplementedError

    def error_reply(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    # -- plumbing ------------------------------------------------------------------------
    def _handle(self, handler: _Handler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = {"_undecodable": raw.decode("utf-8", "replace")}
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(Received(handler.command, path,
                                          {k.lower(): v for k, v in handler.headers.items()},
                                          body))
            behaviour = self._queue.popleft() if self._queue else Behaviour()
        if behaviour.delay and self._stopping.wait(behaviour.delay):
            return
        if behaviour.drop:
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour.raw is not None:
            self._send(handler, behaviour.status, behaviour.raw, {},
                       content_type=behaviour.content_type)
            return
        headers: dict[str, str] = {}
        if behaviour.retry_after is not None:
            headers["retry-after"] = behaviour.retry_after
        if not 200 <= behaviour.status < 300:
            payload = self.error_reply(behaviour.status, behaviour.error)
        elif handler.command == "POST" and path == self.chat_path:
            content = (behaviour.content if behaviour.content is not None
                       else self.reply_fn(body or {}))
            payload = self.chat_reply(body or {}, content, truncated=behaviour.truncated)
        elif handler.command == "GET" and path == self.list_path:
            payload = self.list_reply()
        else:
            behaviour = Behaviour(status=404)
            payload = self.error_reply(404, f"no route for {handler.command} {path}")
        self._send(handler, behaviour.status, json.dumps(payload).encode("utf-8"), headers)

    @staticmethod
    def _send(handler: _Handler, status: int, data: bytes, headers: dict[str, str], *,
              content_type: str = "application/json") -> None:
        try:
            handler.send_response(status)
            handler.send_header("content-type", content_type)
            handler.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the reply


class FakeOpenAIServer(FakeServer):
    """OpenAI chat-completions protocol: ``/v1/chat/completions`` and ``/v1/models``."""

    chat_path = "/v1/chat/completions"
    list_path = "/v1/models"

    def chat_body(self, body: dict[str, Any], content: str, finish: str,
                  prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{request_digest(body)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def list_reply(self) -> dict[str, Any]:
        return {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
            for name in self.models]}

    def error_reply(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "fake_error", "param": None,
                          "code": str(status)}}


class FakeOllamaServer(FakeServer):
    """Ollama protocol: non-streaming ``/api/chat`` and ``/api/tags``."""

    chat_path = "/api/chat"
    list_path = "/api/tags"

    def chat_body(self, body: dict[str, Any], content: str, finish: str,
                  prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {"model": body.get("model", ""), "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": content},
                "done": True, "done_reason": finish,
                "prompt_eval_count": prompt_tokens, "eval_count": completion_tokens}

    def list_reply(self) -> dict[str, Any]:
        return {"models": [{"name": name, "model": name,
                            "modified_at": "2025-01-01T00:00:00Z", "size": 1,
                            "digest": "0" * 64} for name in self.models]}

    def error_reply(self, status: int, message: str) -> dict[str, Any]:
        return {"error": message}

"""A local OpenAI-compatible chat server with a fixed per-request latency (127.0.0.1 only).

Replies are deterministic, valid JSON for whichever skill the request carries (read from
the "Request (<skill>):" header that `cuer_agent.llm.prompts.render` writes), made by the
extractive reader, and `consistency`'s `check` requests by its own rules (as offline) —
so a run against this server takes the same decisions as an offline run. It exists to
measure throughput, not answer quality.

    python benchmarks/latency_server.py --latency 0.1 --port 8765
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cuer_agent.diagnosers._checks import check
from cuer_agent.llm.extractive import ExtractiveBackend
from cuer_agent.llm.skills import REQUESTS, CheckRequest

_SKILL = re.compile(r"Request \((\w+)\):\n```json\n(.*)\n```", re.S)
_READER = ExtractiveBackend()


def skill_request(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """(skill, request JSON) from the first user message carrying a rendered request."""
    for message in messages:
        if message.get("role") != "user":
            continue
        match = _SKILL.search(str(message.get("content", "")))
        if match:
            return match.group(1), json.loads(match.group(2))
    return None


def reply_for(messages: list[dict[str, Any]]) -> str:
    """The extractive reader's reply to the request in the prompt: the same decisions as
    an offline run, so a benchmark exercises the real call pattern (hops, forks,
    diagnosers), only slower."""
    found = skill_request(messages)
    if found is None:
        return json.dumps({"error": "no skill request in the prompt"})
    skill, payload = found
    request = REQUESTS[skill].model_validate(payload)
    if isinstance(request, CheckRequest):  # `consistency`'s checks: its rules, not the reader's
        return json.dumps(check(request).model_dump(mode="json"), sort_keys=True)
    return _READER.respond(skill, request, None).text or ""


class LatencyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 drops connections of 16 concurrent clients

    def __init__(self, port: int = 0, latency: float = 0.1) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.latency = latency
        self.requests = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> LatencyServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self


class _Handler(BaseHTTPRequestHandler):
    server: LatencyServer
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM and hosted APIs do
    disable_nagle_algorithm = True  # headers and body go out as two writes

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # /v1/models
        self._send({"object": "list", "data": [{"id": "bench", "object": "model",
                                                 "created": 0, "owned_by": "bench"}]})

    def do_POST(self) -> None:  # /v1/chat/completions
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        time.sleep(self.server.latency)
        with self.server._lock:
            self.server.requests += 1
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant",
                                             "content": reply_for(body["messages"])}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20,
                              "total_tokens": 120}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = LatencyServer(args.port, args.latency)
    print(f"serving {server.url} with {args.latency * 1000:.0f} ms latency")
    server.serve_forever()


if __name__ == "__main__":
    main()

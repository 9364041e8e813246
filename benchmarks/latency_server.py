"""A local OpenAI-compatible chat server with a fixed per-request latency (127.0.0.1 only).

Replies are deterministic, valid JSON for whichever skill the request carries (read from
the "Request (<skill>):" header that `cuer_agent.llm.prompts.render` writes): the plan
searches twice then answers, the reader selects the first evidence item. It exists to
measure throughput, not answer quality.

    python benchmarks/latency_server.py --latency 0.1 --port 8765
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SKILL = re.compile(r"Request \((\w+)\):\n```json\n(.*)\n```", re.S)


def reply_for(messages: list[dict[str, str]]) -> str:
    match = _SKILL.search(messages[-1]["content"]) or _SKILL.search(messages[1]["content"])
    skill, payload = (match.group(1), json.loads(match.group(2))) if match else ("plan", {})
    tag = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:6]
    if skill == "plan":
        if payload.get("hop", 1) <= 2:
            return json.dumps({"action": "search", "subquery": f"{payload['question']} {tag}"})
        return json.dumps({"action": "answer"})
    if skill == "read":
        ids = [ev["id"] for ev in payload.get("evidence", [])][:1]
        return json.dumps({"selected_ids": ids, "finding": f"finding {tag}",
                           "support": "supported", "confidence": 0.7})
    if skill == "answer":
        ids = [ev["id"] for hop in payload.get("hops", []) for ev in hop["evidence"]][:2]
        return json.dumps({"answer": f"answer {tag}", "confidence": 0.5, "used_ids": ids,
                           "rationale": "benchmark"})
    return json.dumps({"stage": "retrieval", "hop": 1, "rationale": "benchmark"})


class LatencyServer(ThreadingHTTPServer):
    daemon_threads = True

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

"""Ollama through the official `ollama` client, with JSON-schema `format`.

Every request carries `num_predict` (the skill's output-token limit) and `think: false`
unless thinking is on; a reply with `done_reason: "length"` hit the limit. The client
waits forever by default; we always pass a timeout. It never retries; `RemoteBackend`
does, and counts.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from cuer_agent._json import JsonObject
from cuer_agent.errors import ConfigError
from cuer_agent.llm._remote import (
    RETRYABLE_STATUS,
    Failure,
    RemoteBackend,
    Sampling,
    Sent,
    rejected_parameter,
)
from cuer_agent.llm.backends import register_backend

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaBackend(RemoteBackend):
    name = "ollama"

    def __init__(self, model: str, *, base_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.base_url = base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        import ollama  # here, not at the top: the CLI lists backends without this import

        self._client = ollama.Client(host=self.base_url, timeout=self.timeout)

    def options(self, max_tokens: int, sampling: Sampling) -> JsonObject:
        values = {"temperature": sampling.temperature, "seed": sampling.seed,
                  "max_tokens": max_tokens}
        names = {"temperature": "temperature", "seed": "seed", "max_tokens": "num_predict"}
        return {names[k]: v for k, v in values.items() if self.sends(k)}

    def _send(self, messages: list[dict[str, str]], schema: JsonObject,
              max_tokens: int, sampling: Sampling) -> Sent:
        think = self.think if self.sends("think") else None
        reply = self._client.chat(model=self.model, messages=messages, format=schema,
                                  options=self.options(max_tokens, sampling), think=think,
                                  stream=False)
        return Sent(text=reply.message.content or "",
                    prompt_tokens=reply.prompt_eval_count or 0,
                    completion_tokens=reply.eval_count or 0,
                    truncated=reply.done_reason == "length")

    def _classify(self, exc: Exception) -> Failure | None:
        import ollama

        if isinstance(exc, httpx.TimeoutException):
            return Failure(True, f"timeout after {self.timeout:g}s")
        if isinstance(exc, ConnectionError | httpx.ConnectError):
            return Failure(True, f"cannot connect to {self.base_url}")
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code
            retryable = status in RETRYABLE_STATUS or status == -1
            rejected = rejected_parameter(str(exc.error)) if status == 400 else ""
            return Failure(retryable, f"HTTP {status}: {exc.error}", rate_limited=status == 429,
                           rejected=rejected)
        if isinstance(exc, httpx.TransportError):  # e.g. the server closed the connection
            return Failure(True, f"connection to {self.base_url} failed ({type(exc).__name__})")
        if isinstance(exc, ValueError):  # undecodable JSON, or a pydantic ValidationError
            return Failure(False, f"unexpected reply from {self.base_url} "
                                  f"(not the Ollama chat protocol: {str(exc).splitlines()[0]})")
        return None

    def check(self) -> None:
        import ollama

        try:
            listed = [m.model for m in self._client.list().models]
        except (ConnectionError, httpx.HTTPError, ollama.ResponseError):
            raise ConfigError(f"backend ollama: cannot reach {self.base_url}") from None
        names = {name for m in listed if m for name in (m, m.removesuffix(":latest"))}
        if self.model not in names:
            raise ConfigError(f"backend ollama: model {self.model!r} is not pulled on "
                              f"{self.base_url} (run `ollama pull {self.model}`)")


@register_backend("ollama", help="an Ollama server", concurrency=4)
def make_ollama(model: str | None = None, base_url: str | None = None,
                **kwargs: Any) -> OllamaBackend:
    if not model:
        raise ConfigError("backend ollama needs --model")
    return OllamaBackend(model, base_url=base_url, **kwargs)

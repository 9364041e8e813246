"""Any OpenAI-compatible chat server: OpenAI, vLLM, llama.cpp server, LM Studio.

Uses the official `openai` client with `response_format={"type": "json_schema",
"json_schema": {..., "strict": true}}` (structured output), temperature 0, a seed, and
`max_tokens` per skill. Thinking output is off unless `think=True`: a self-hosted server
(one given by `--base-url`) gets `chat_template_kwargs: {"enable_thinking": false}`,
which Qwen3 on vLLM or llama.cpp honours and other templates ignore; api.openai.com,
which rejects that field, gets nothing. A reply with `finish_reason: "length"` hit the
limit.
The client's own retries are off (`max_retries=0`); `RemoteBackend` retries and counts.
A plain-HTTP server reached without a proxy is spoken to through
`cuer_agent.llm._http.KeepAliveTransport` (mounted under the official client, which still
builds the requests and maps errors): it costs about 1 ms less CPU per request than
httpx2's default transport, and at high concurrency the client's CPU is what limits how
busy a server stays. `https://` (api.openai.com) keeps httpx2's own transport.
The API key comes from `OPENAI_API_KEY` only and is never written anywhere; servers that
need no key get a placeholder.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2

from cuer_agent._json import JsonObject
from cuer_agent.errors import ConfigError
from cuer_agent.llm._http import KeepAliveTransport, proxy_for, use_keep_alive
from cuer_agent.llm._remote import (
    RETRYABLE_STATUS,
    Failure,
    RemoteBackend,
    Sampling,
    Sent,
    rejected_parameter,
    retry_after_seconds,
)
from cuer_agent.llm.backends import register_backend

_NO_KEY = "sk-no-key-required"


class OpenAIBackend(RemoteBackend):
    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        key = os.environ.get("OPENAI_API_KEY")
        if not key and base_url is None:
            raise ConfigError("backend openai: OPENAI_API_KEY is not set (or pass --base-url "
                              "for a local OpenAI-compatible server)")
        self.base_url = base_url
        import openai  # here, not at the top: the CLI lists backends without this import

        # A plain-HTTP server (vLLM, llama.cpp, LM Studio) gets the lean keep-alive
        # transport: the client's CPU per request bounds how busy a study keeps it.
        http_client = (openai.DefaultHttpxClient(mounts={"http://": KeepAliveTransport()})
                       if use_keep_alive(base_url) else None)
        self._client = openai.OpenAI(api_key=key or _NO_KEY, base_url=_v1(base_url),
                                     timeout=self.timeout, max_retries=0,
                                     http_client=http_client)

    def _send(self, messages: list[dict[str, str]], schema: JsonObject,
              max_tokens: int, sampling: Sampling) -> Sent:
        # The client's documented raw `post`: its transport, auth, timeouts and status
        # errors, without re-validating our own JSON body against its TypedDicts (that
        # transform alone cost ~1.6 ms of GIL-held CPU per call — a third of our
        # per-request overhead at concurrency 16).
        raw = self._client.post("/chat/completions", cast_to=httpx2.Response,
                                body=openai_body(self, messages, schema, max_tokens,
                                                 template_kwargs=self.base_url is not None,
                                                 sampling=sampling))
        return chat_reply(raw.json())

    def _classify(self, exc: Exception) -> Failure | None:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return Failure(True, f"timeout after {self.timeout:g}s")
        if isinstance(exc, openai.APIConnectionError):
            return Failure(True, f"cannot connect to {self.base_url or 'api.openai.com'}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = str(exc.message).splitlines()[0][:200] if exc.message else ""
            rejected = rejected_parameter(message) if status in (400, 422) else ""
            return Failure(status in RETRYABLE_STATUS,
                           f"HTTP {status}: {message}" if rejected else f"HTTP {status}",
                           retry_after_seconds(exc.response.headers),
                           rate_limited=status == 429, rejected=rejected)
        if isinstance(exc, ValueError):  # undecodable JSON, or not a chat completion
            return Failure(False, f"unexpected reply from {self.base_url or 'api.openai.com'} "
                                  f"(not the OpenAI chat protocol: {exc})")
        return None

    def check(self) -> None:
        import openai

        try:
            listed = [m.id for m in self._client.models.list()]
        except openai.AuthenticationError:
            raise ConfigError("backend openai: the server rejected the API key "
                              "(set OPENAI_API_KEY)") from None
        except (openai.APIConnectionError, openai.APITimeoutError, httpx2.HTTPError):
            proxy = proxy_for(_v1(self.base_url) or "https://api.openai.com")
            raise ConfigError(f"backend openai: cannot reach {self.base_url or 'api.openai.com'}"
                              + (f" through the proxy {proxy} (set in the environment; "
                                 "no_proxy lists hosts to reach directly)" if proxy else "")
                              ) from None
        except openai.APIStatusError:
            return  # some servers have no /models; the first request will tell
        if listed and self.model not in listed:
            raise ConfigError(f"backend openai: unknown model {self.model!r} "
                              f"(the server offers {', '.join(sorted(listed)[:8])})")


def openai_body(backend: RemoteBackend, messages: list[dict[str, str]],
                schema: JsonObject, max_tokens: int, *,
                template_kwargs: bool, sampling: Sampling) -> JsonObject:
    """An OpenAI-style chat request: the messages, a strict JSON-schema reply format, and
    every decoding option the backend sends (see `RemoteBackend.omit`), sampled as
    `sampling` says (`RemoteBackend.sampling`).
    `template_kwargs`: the server renders chat templates itself (vLLM, llama.cpp) and
    takes `chat_template_kwargs`, where thinking is switched off."""
    body: JsonObject = {
        "model": backend.model, "messages": messages,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "reply", "schema": schema,
                                            "strict": True}}}
    for parameter, value in (("temperature", sampling.temperature), ("seed", sampling.seed),
                             ("max_tokens", max_tokens)):
        if backend.sends(parameter):
            body[parameter] = value
    if template_kwargs and backend.sends("think") and not backend.think:
        body["chat_template_kwargs"] = {"enable_thinking": False}
    return body


def chat_reply(reply: Any) -> Sent:
    """The text, usage and truncation of an OpenAI-style chat completion."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not choices or not isinstance(choices[0].get("message"), dict):
        # A non-chat JSON body, e.g. a proxy's error page.
        raise ValueError("not a chat completion")
    usage = reply.get("usage") or {}
    return Sent(text=choices[0]["message"].get("content") or "",
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                truncated=choices[0].get("finish_reason") == "length")


def _v1(base_url: str | None) -> str | None:
    """Accept `http://host:8000` as well as `http://host:8000/v1`."""
    if base_url is None:
        return None
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


@register_backend("openai", help="an OpenAI-compatible server", concurrency=16)
def make_openai(model: str | None = None, base_url: str | None = None,
                **kwargs: Any) -> OpenAIBackend:
    if not model:
        raise ConfigError("backend openai needs --model")
    return OpenAIBackend(model, base_url=base_url, **kwargs)

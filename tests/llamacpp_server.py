"""A real llama.cpp HTTP server for tests: `python tests/llamacpp_server.py MODEL THREADS`.

Starts `xllamacpp.Server` (llama.cpp's own OpenAI-compatible server, compiled into the
wheel) on 127.0.0.1 at a free port, with the model served under the name MODEL (a .gguf
path or `smollm2-135m`), prints its base URL (``http://127.0.0.1:PORT``) on one line,
and serves until its stdin closes. A separate process, as a user's server would be:
stopping it is killing it, whatever state it is in.
"""

from __future__ import annotations

import sys

from cuer_agent.llm.llamacpp_backend import import_xllamacpp, resolve_model, server_params


def main(model: str, threads: int) -> None:
    params = server_params(resolve_model(model), threads)  # the in-process backend's
    params.model_alias = {model}  # a set of names in this xllamacpp (a str becomes its chars)
    server = import_xllamacpp().Server(params)  # OpenMP waits passively, as in process
    print(server.listening_address, flush=True)
    sys.stdin.read()  # until the test closes our stdin


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

"""llama.cpp's prompt cache: faster, and are the replies the same bytes?

    python benchmarks/prompt_cache.py --model M.gguf --n 12     # MuSiQue, 4 hops
    python benchmarks/prompt_cache.py --smoke                   # CI: SmolLM2-135M, synthetic

Runs the agent (`cuer-agent run --backend llamacpp --no-cache`) twice on the same
questions, each in a process of its own (a cold server): once as the backend runs it
(`cache_prompt` off: every request's prompt is processed whole) and once with llama.cpp's
prompt cache on (a request reuses the KV cache of the previous one's shared prefix — a
run's hops repeat their instructions). Prints the wall time of each and how many traces,
and hops, differ between the two.

The backend keeps the cache off: measured here with SmolLM2-135M on 12 MuSiQue questions
(`--model smollm2-135m --n 12`), 7 of 12 traces differed (4 in their sub-queries or
findings): a prompt processed in pieces is not computed in the same order as one
processed whole, and greedy decoding amplifies the last bits. The runs would be faster
(89 s vs 273 s there, on a busy machine) and not reproducible.

The switch is internal on purpose (no flag turns it on), so the child process sets it on
the backend's server settings and on each request body.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _smoke import parse_args

SMOKE = {"dataset": "synthetic", "n": 1, "hops": 1, "model": "smollm2-135m"}


def child(cache_prompt: bool, argv: list[str]) -> None:
    """`cuer-agent ARGV` with llama.cpp's prompt cache set to `cache_prompt`."""
    import cuer_agent.llm.llamacpp_backend as backend
    from cuer_agent.cli import main

    settings, server_of = backend.server_params, backend._server

    def params(path: Path, threads: int) -> Any:
        made = settings(path, threads)
        made.cache_prompt = cache_prompt
        return made

    class Switched:  # the server, each request's body with the cache switch set
        def __init__(self, server: Any) -> None:
            self.server = server

        def handle_chat_completions(self, body: dict[str, Any]) -> Any:
            return self.server.handle_chat_completions({**body, "cache_prompt": cache_prompt})

    backend.server_params = params  # type: ignore[assignment]
    backend._server = lambda path, threads: Switched(server_of(path, threads))  # type: ignore[assignment]
    sys.argv = ["cuer-agent", *argv]
    main()


def run(cache_prompt: bool, args: argparse.Namespace, out: Path) -> float:
    data = ["--dataset", args.dataset] + (["--path", args.path] if args.path else [])
    argv = ["run", "--backend", "llamacpp", "--model", args.model, "--threads",
            str(args.threads), *data, "--n", str(args.n), "--hops", str(args.hops),
            "--out", str(out), "--no-cache", "--no-progress"]
    start = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", "on" if cache_prompt else "off",
                    *argv], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY",
                                                                        "PASSIVE")})
    return time.perf_counter() - start


def traces(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2] == "on", sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a .gguf path or smollm2-135m")
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--path", default=None, help="the data file (default: the shared sample)")
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--hops", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parse_args(parser, SMOKE)
    with tempfile.TemporaryDirectory() as tmp:
        walls = {on: run(on, args, Path(tmp) / f"cache-{on}") for on in (False, True)}
        off, on = traces(Path(tmp) / "cache-False"), traces(Path(tmp) / "cache-True")
    hops_of = [[(h["subquery"], h["finding"]) for h in t["trace"]["hops"]] for t in off]
    differ = sum(a != b for a, b in zip(off, on, strict=True))
    hops_differ = sum(hops_of[i] != [(h["subquery"], h["finding"]) for h in t["trace"]["hops"]]
                      for i, t in enumerate(on))
    print(f"{args.model}, {args.dataset}, {args.n} questions, {args.hops} hops, "
          f"{args.threads} threads")
    print(f"  prompt cache off  wall {walls[False]:.1f} s")
    print(f"  prompt cache on   wall {walls[True]:.1f} s")
    print(f"  traces that differ: {differ} of {len(off)} ({hops_differ} in their sub-queries "
          "or findings)")


if __name__ == "__main__":
    main()

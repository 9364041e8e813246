"""Wall time of `cuer-agent evaluate` per executor: do worker processes pay off?

    python benchmarks/executors.py --n 100 --hops 3 --workers 2

Runs the whole command (interpreter, worker and Ray start-up included) with the offline
extractive backend and no response cache, so every skill request is computed: once with
`--executor thread` (concurrency 1), once with `--executor process`, and — if `ray` is
installed — once with `--executor ray`, each with `--workers N`. Reports wall times and
checks that every run wrote the same summary.json bytes. The 1-minute load average
before each run is printed too: on a shared machine other jobs skew the comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def evaluate(out: Path, n: int, hops: int, *extra: str) -> float:
    cmd = [sys.executable, "-m", "cuer_agent.cli", "evaluate", "--hops", str(hops),
           "--n", str(n), "--out", str(out), "--no-cache", "--no-progress", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    workers = ["--workers", str(args.workers)]
    runs = {"thread (concurrency 1)": ["--executor", "thread", "--concurrency", "1"],
            f"process, {args.workers} workers": ["--executor", "process", *workers]}
    if importlib.util.find_spec("ray") is not None:
        runs[f"ray (local), {args.workers} workers"] = ["--executor", "ray", *workers]
    tmp = Path(tempfile.mkdtemp())
    summaries = set()
    print(f"cuer-agent evaluate --hops {args.hops} --n {args.n}, extractive backend, no cache")
    try:
        for i, (label, extra) in enumerate(runs.items()):
            load = os.getloadavg()[0]
            wall = evaluate(tmp / str(i), args.n, args.hops, *extra)
            summaries.add((tmp / str(i) / "summary.json").read_bytes())
            print(f"{label:>28}: {wall:7.1f} s   (load before: {load:.2f})")
    finally:
        shutil.rmtree(tmp)
    print("identical summary.json for every executor:", len(summaries) == 1)


if __name__ == "__main__":
    main()

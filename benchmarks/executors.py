"""Wall time of `cuer-agent evaluate` per executor: do worker processes pay off?

    python benchmarks/executors.py --n 100 --hops 3 --workers 2
    python benchmarks/executors.py --smoke       # n = 2, 2 hops, 1 fault, 2 diagnosers,
                                                 # thread and process: CI's run, seconds
    python benchmarks/executors.py --smoke --executors thread,ray   # CI's e2e lane

Runs the whole command (interpreter, worker and Ray start-up included) with the offline
extractive backend and no response cache, so every skill request is computed: once with
`--executor thread` (concurrency 1), once with `--executor process`, and — if `ray` is
installed — once with `--executor ray`, each with `--workers N` (`--executors` picks
among them). Reports wall times and checks that every run wrote the same summary.json
bytes. The 1-minute load average before each run is printed too: on a shared machine
other jobs skew the comparison. The run directories are in a temporary directory,
removed at the end.
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

from _smoke import parse_args

EXECUTORS = ("thread", "process", "ray")
SMOKE = {"n": 2, "hops": 2, "executors": "thread,process", "faults": "empty_retrieval",
         "diagnosers": "coverage,first-hop"}


def evaluate(out: Path, n: int, hops: int, *extra: str) -> float:
    """Wall time of one `cuer-agent evaluate` in a fresh process, writing into `out`."""
    cmd = [sys.executable, "-m", "cuer_agent.cli", "evaluate", "--hops", str(hops),
           "--n", str(n), "--out", str(out), "--no-cache", "--no-progress", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def default_executors() -> str:
    """thread and process, and ray when it is installed."""
    have_ray = importlib.util.find_spec("ray") is not None
    return ",".join(e for e in EXECUTORS if e != "ray" or have_ray)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executors", default=default_executors(),
                        help="comma-separated, among thread, process, ray "
                        "(default: all installed)")
    parser.add_argument("--faults", default=None, help="evaluate --faults (default all)")
    parser.add_argument("--diagnosers", default=None, help="evaluate --diagnosers")
    args = parse_args(parser, SMOKE)
    chosen = args.executors.split(",")
    unknown = set(chosen) - set(EXECUTORS)
    if unknown:
        parser.error(f"--executors: unknown {sorted(unknown)}; choose among {EXECUTORS}")
    if "ray" in chosen and importlib.util.find_spec("ray") is None:
        parser.error("--executors ray: ray is not installed (pip install 'cuer-agent[ray]')")
    workers = ["--workers", str(args.workers)]
    every = {"thread": ("thread (concurrency 1)", ["--executor", "thread", "--concurrency", "1"]),
             "process": (f"process, {args.workers} workers", ["--executor", "process", *workers]),
             "ray": (f"ray (local), {args.workers} workers", ["--executor", "ray", *workers])}
    runs = dict(every[name] for name in chosen)
    study = [*(["--faults", args.faults] if args.faults else []),
             *(["--diagnosers", args.diagnosers] if args.diagnosers else [])]
    tmp = Path(tempfile.mkdtemp())
    summaries = set()
    print(f"cuer-agent evaluate --hops {args.hops} --n {args.n} {' '.join(study)}".rstrip()
          + ", extractive backend, no cache")
    try:
        for i, (label, extra) in enumerate(runs.items()):
            load = os.getloadavg()[0]
            wall = evaluate(tmp / str(i), args.n, args.hops, *extra, *study)
            summaries.add((tmp / str(i) / "summary.json").read_bytes())
            print(f"{label:>28}: {wall:7.1f} s   (load before: {load:.2f})", flush=True)
    finally:
        shutil.rmtree(tmp)
    print("identical summary.json for every executor:", len(summaries) == 1)


if __name__ == "__main__":
    main()

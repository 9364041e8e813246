"""Throughput against a model server with fixed latency: does `--concurrency` keep it busy?

    python benchmarks/throughput.py --latency 0.1 --n 48 --concurrency 1,4,16
    python benchmarks/throughput.py --concurrency 16 --executor process --workers 2
    python benchmarks/throughput.py --smoke      # 10 ms, n = 2, 2 hops, 2 faults,
                                                 # 4 diagnosers, concurrency 1,16: CI's run

Starts `latency_server.py` in its own process on 127.0.0.1 (a model server is another
process, usually another machine), then runs the `cuer-agent evaluate --hops 3` study
(synthetic world, every fault and diagnoser unless `--faults` / `--diagnosers` choose,
cold response cache) against it as an OpenAI-compatible backend at each concurrency.
The study runs in this process, timed from loading the data to summary.json, so
start-up (module imports: LangGraph's and the backend clients'; the backend's HTTP
client) and report plotting are not counted. It reports:

* wall time;
* model calls, and the design minimum: the distinct requests the study needs (the rows a
  cold cache holds at the end); calls > minimum would mean a request was sent twice;
* repeats served by the response cache;
* efficiency = (calls × latency / concurrency) / wall time — 1.0 means the server always
  had `concurrency` requests to work on;
* the client's CPU time (this process, all threads, plus worker processes) and its CPU
  per model call;
* the physical limit of the efficiency given that CPU: one interpreter runs Python on
  one core at a time, so the study cannot take less wall time than its CPU time spread
  over the cores it may use (1 for the thread executor; the workers, at most the cores,
  for the process executor): limit = (calls × latency / concurrency) / (CPU / cores),
  at most 1. When the measured efficiency is close to it, the client is the bottleneck.

Repeats inside the study are served two ways: a repeated request by the response cache
("cache hits"), a repeated execution (same state, entry node and fault) by the
executor's reuse, whose requests are not made at all ("reused").

Before the first timed run, one untimed study on one example loads the modules the
study imports lazily (scipy, networkx, bm25s …): start-up, like LangGraph's import, so
that the first setting's row counts what the later ones count. It runs at the largest
concurrency asked for (its requests are not counted; at concurrency 1 and 0.5 s a
request it alone would take two minutes).

Last, the study is run once more at concurrency 1 with the last setting's response cache
kept warm, so every request is a cache hit: its CPU over the cold run's calls is the
client's CPU per model call apart from sending requests (the official openai client, its
transport, the server's replies parsed) — what the rest of the study (LangGraph, the
agent, faults, probes, metrics) costs per call.

It also checks that every setting wrote the same summary.json. Run directories and
response caches are in a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _smoke import parse_args

HERE = Path(__file__).resolve().parent
SMOKE = {"latency": 0.01, "n": 2, "hops": 2, "concurrency": "1,16",
         "faults": "empty_retrieval,query_drift",
         "diagnosers": "coverage,frozen-hop,first-hop,consistency"}


def start_server(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    """`latency_server.py` in a process of its own on a free port: (process, base URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"),
                               "--latency", str(latency), "--port", str(port)],
                              stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/models", timeout=1).close()
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the latency server did not start")


def client_cpu() -> float:
    """CPU seconds of this process and of its reaped children (process-executor workers;
    the latency server is reaped only after the last run)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def usable_cores(executor: str, workers: int | None) -> int:
    """Cores the study's Python can run on at once (see the module docstring)."""
    cores = os.cpu_count() or 1
    return 1 if executor == "thread" else max(1, min(workers or cores, cores))


def study_config(url: str, n: int, hops: int, faults: str | None,
                 diagnosers: str | None) -> dict[str, Any]:
    """The study's config: synthetic data, the server as an OpenAI-compatible backend, and
    the faults and diagnosers asked for (None: every default one)."""
    config: dict[str, Any] = {
        "data": {"dataset": "synthetic", "n": n, "hops": hops},
        "backend": {"name": "openai", "model": "bench", "base_url": url}}
    if faults:
        config["propagation"] = {"faults": faults.split(",")}
    if diagnosers:
        config["diagnose"] = {"names": diagnosers.split(",")}
    return config


def run_once(config: dict[str, Any], parallel: Any, cache_path: Path,
             run_path: Path) -> tuple[float, float, dict[str, Any], int, bytes]:
    """One evaluate study (`config`, see `study_config`) in this process with the response
    cache at `cache_path` (cold when the file is new): (wall, cpu, ledger, cached rows,
    summary)."""
    import cuer_agent.graphs.agent  # noqa: F401  start-up (LangGraph's import), not per call
    from cuer_agent.config import StudyConfig
    from cuer_agent.data._select import load_study_data
    from cuer_agent.llm.backends import SkillClient, make_backend
    from cuer_agent.llm.cache import ResponseCache
    from cuer_agent.run_dir import RunDir
    from cuer_agent.studies.evaluate.runner import run_evaluate

    study = StudyConfig.model_validate(config)
    url = config["backend"]["base_url"]
    # start-up too: the backend clients' import, the HTTP client and its TLS context
    backend = make_backend("openai", model="bench", base_url=url)
    backend.check()
    start, cpu = time.perf_counter(), client_cpu()
    cache = ResponseCache(cache_path)
    skills = SkillClient(backend, cache=cache)
    data = config["data"]
    dataset = load_study_data("synthetic", None, data["n"], data["hops"], study.data.seed)
    run_dir = RunDir(run_path)
    run_dir.open({"benchmark": "throughput"})
    run_evaluate(dataset, skills, run_dir, study, show_progress=False, parallel=parallel)
    wall, cpu = time.perf_counter() - start, client_cpu() - cpu
    return (wall, cpu, skills.ledger.to_dict(), len(cache),
            (run_path / "summary.json").read_bytes())


def warm_up(config: dict[str, Any], parallel: Any) -> None:
    """One untimed study on one example: the modules the study imports lazily."""
    one = {**config, "data": {**config["data"], "n": 1}}
    with tempfile.TemporaryDirectory() as tmp:
        run_once(one, parallel, Path(tmp) / "cache.sqlite", Path(tmp) / "run")


def main() -> None:
    from cuer_agent.parallel import Parallelism

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per request")
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated settings")
    parser.add_argument("--executor", default="thread")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--faults", default=None, help="evaluate --faults (default all)")
    parser.add_argument("--diagnosers", default=None,
                        help="evaluate --diagnosers (default all)")
    args = parse_args(parser, SMOKE)
    settings = [int(x) for x in args.concurrency.split(",")]
    server, url = start_server(args.latency)
    config = study_config(url, args.n, args.hops, args.faults, args.diagnosers)
    summaries = set()
    chosen = "".join(f", {flag} {value}" for flag, value in
                     (("faults", args.faults), ("diagnosers", args.diagnosers)) if value)
    print(f"server latency {args.latency * 1000:.0f} ms (own process), {args.n} synthetic "
          f"{args.hops}-hop examples, evaluate study{chosen}, cold cache, executor "
          f"{args.executor}" + (f" ×{args.workers}" if args.workers else ""))
    print(f"{'concurrency':>11} {'wall s':>8} {'calls':>6} {'minimum':>7} {'cache hits':>10} "
          f"{'reused':>6} {'efficiency':>10} {'limit':>6} {'client cpu s':>12} "
          f"{'cpu/call ms':>11}")
    cores = usable_cores(args.executor, args.workers)
    tmp = Path(tempfile.mkdtemp())
    try:
        warm_up(config, Parallelism(executor=args.executor, concurrency=max(settings),
                                    workers=args.workers))
        for i, c in enumerate(settings):
            policy = Parallelism(executor=args.executor, concurrency=c, workers=args.workers)
            cache_path = tmp / f"cache{i}.sqlite"
            wall, cpu, ledger, minimum, summary = run_once(config, policy, cache_path,
                                                           tmp / f"run{i}")
            summaries.add(summary)
            busy = ledger["calls"] * args.latency / c  # the wall time of a server always busy
            efficiency, limit = busy / wall, min(1.0, busy / (cpu / cores))
            per_call = 1000 * cpu / max(ledger["calls"], 1)
            print(f"{c:>11} {wall:>8.2f} {ledger['calls']:>6} {minimum:>7} "
                  f"{ledger['cache_hits']:>10} {ledger['reused']:>6} {efficiency:>10.2f} "
                  f"{limit:>6.2f} {cpu:>12.1f} "
                  f"{per_call:>11.1f}", flush=True)
        # The last setting again, its cache warm: no request is sent.
        _, warm_cpu, warm, _, summary = run_once(config, Parallelism(), cache_path,
                                                 tmp / "warm")
        summaries.add(summary)
        print(f"warm cache (concurrency 1, {warm['calls']} calls, {warm['cache_hits']} cache "
              f"hits): client cpu {warm_cpu:.1f} s = {1000 * warm_cpu / ledger['calls']:.1f} ms "
              "per model call of the cold run without sending requests")
    finally:
        server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("identical summary.json at every setting:", len(summaries) == 1)


if __name__ == "__main__":
    main()

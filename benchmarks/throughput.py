"""Throughput against a model server with fixed latency: does `--concurrency` keep it busy?

    python benchmarks/throughput.py --latency 0.1 --n 48 --concurrency 1,4,16

Starts `latency_server.LatencyServer` on 127.0.0.1, runs the agent study of `cuer-agent
run` (hop budget 3, synthetic world, cold cache) against it as an OpenAI-compatible
backend at each concurrency — in this process, so interpreter start-up is not counted —
and reports wall time, model calls, calls served by the cache, and
efficiency = (calls × latency / concurrency) / wall time — 1.0 means the server was never
left idle by us. Also checks that every concurrency wrote the same summary.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency_server import LatencyServer


def run_once(url: str, n: int, concurrency: int, tmp: Path) -> tuple[float, dict, bytes]:
    """One cold-cache `run` in this process; wall time from data loading to summary."""
    from cuer_agent.data import load_dataset
    from cuer_agent.execution import AgentConfig, Executor
    from cuer_agent.experiments.run_agent import run_dataset
    from cuer_agent.llm.backends import SkillClient, make_backend
    from cuer_agent.llm.cache import ResponseCache
    from cuer_agent.runs import RunDir

    start = time.perf_counter()
    backend = make_backend("openai", model="bench", base_url=url)
    backend.check()
    skills = SkillClient(backend, cache=ResponseCache(tmp / "cache.sqlite"))
    dataset = load_dataset("synthetic", n=n, hops=3, seed=0)
    run_dir = RunDir(tmp / "run")
    run_dir.open({"benchmark": "throughput"})
    run_dataset(dataset, Executor(skills, AgentConfig(hop_budget=3)), run_dir,
                show_progress=False, concurrency=concurrency)
    wall = time.perf_counter() - start
    return wall, skills.ledger.to_dict(), (tmp / "run" / "summary.json").read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--n", type=int, default=96)
    parser.add_argument("--concurrency", default="1,4,16")
    args = parser.parse_args()
    server = LatencyServer(0, args.latency).start()
    summaries = set()
    print(f"server latency {args.latency * 1000:.0f} ms, {args.n} synthetic 3-hop examples, "
          "agent hop budget 3, cold cache")
    print(f"{'concurrency':>11} {'wall s':>8} {'calls':>6} {'cache hits':>10} {'efficiency':>10}")
    for c in (int(x) for x in args.concurrency.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            wall, ledger, summary = run_once(server.url, args.n, c, Path(tmp))
        summaries.add(summary)
        efficiency = (ledger["calls"] * args.latency / c) / wall
        print(f"{c:>11} {wall:>8.2f} {ledger['calls']:>6} {ledger['cache_hits']:>10} "
              f"{efficiency:>10.2f}")
    print("identical summary.json at every concurrency:", len(summaries) == 1)
    server.shutdown()


if __name__ == "__main__":
    main()

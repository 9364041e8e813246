"""Agent overhead: steps per second with the extractive backend, and where the time goes.

    python benchmarks/agent_overhead.py --n 200 --hops 3
    python benchmarks/agent_overhead.py --agent examples/react_agent.py:build
    python benchmarks/agent_overhead.py --smoke      # n = 5, 2 hops: CI's run, seconds

Pins the process to one core, runs the agent over the synthetic world (retriever built
once, outside the timing), then repeats the run under cProfile and splits self-time by
the package that owns the code: LangGraph/LangChain (the graph runtime), cuer-agent
(nodes, reader, execution), pydantic, BM25 (bm25s/numpy/scipy), and the rest.

Each of the three passes (warm-up, timed, profiled) has an executor of its own: an
executor reuses an execution it has already made (`Executor._execute`: same example and
state with the deterministic extractive reader), so a pass on the warm-up's executor
would time lookups, not the agent. The warm-up loads modules and module-level caches.
Figures go into the closing note of the issue; tests/test_benchmarks.py runs `--smoke`.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import defaultdict

from _smoke import parse_args

from cuer_agent.data import Dataset, load_dataset
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.retrieval import BM25Retriever

GROUPS = (("langgraph", "langgraph"), ("langchain_core", "langgraph"),
          ("cuer_agent", "cuer-agent"), ("/graphs/", "cuer-agent"), ("pydantic", "pydantic"),
          ("bm25s", "bm25"), ("numpy", "bm25"), ("scipy", "bm25"),
          ("/copy.py", "snapshot copies"), ("~", "python builtins"))


SMOKE = {"n": 5, "hops": 2}


def group_of(filename: str) -> str:
    """The package group that owns the code of `filename` (see GROUPS)."""
    for needle, group in GROUPS:
        if needle in filename:
            return group
    return "python/other"


def run_all(executor: Executor, dataset: Dataset, retriever: BM25Retriever) -> int:
    """Run the agent on every example; the number of agent steps taken."""
    steps = 0
    for example in dataset.examples:
        steps += len(executor.run(example, retriever).trace.steps)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--agent", default=None, help="module:factory (default: ours)")
    args = parse_args(parser, SMOKE)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    dataset = load_dataset("synthetic", n=args.n, hops=args.hops, seed=args.seed)
    retriever = BM25Retriever.from_passages(dataset.corpus)

    def fresh_executor() -> Executor:
        """An executor that has made no execution yet (the graph compiled here)."""
        return Executor(SkillClient(make_backend("extractive")),
                        AgentConfig(hop_budget=args.hops), agent=args.agent)

    run_all(fresh_executor(), dataset, retriever)  # warm-up (imports, caches)

    executor = fresh_executor()
    start = time.perf_counter()
    steps = run_all(executor, dataset, retriever)
    wall = time.perf_counter() - start
    print(f"{args.n} examples, {steps} steps in {wall:.2f}s on one core: "
          f"{steps / wall:.0f} steps/s, {1000 * wall / args.n:.1f} ms per example")

    executor = fresh_executor()
    profiler = cProfile.Profile()
    profiler.enable()
    run_all(executor, dataset, retriever)
    profiler.disable()
    stats = pstats.Stats(profiler)
    by_group: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_group[group_of(filename)] += tottime
    total = sum(by_group.values())
    print("self-time share (cProfile):")
    for group, seconds in sorted(by_group.items(), key=lambda kv: -kv[1]):
        print(f"  {group:14s} {100 * seconds / total:5.1f}%")


if __name__ == "__main__":
    main()

"""Bootstrap speed: 5000 resamples × 200 examples × 5 metrics, as the CUE-R summary does.

    python benchmarks/bootstrap_speed.py
    python benchmarks/bootstrap_speed.py --smoke     # 500 resamples, 1 repeat: CI's run

Reports the median wall time of `bootstrap_ci` on a (metrics, examples) matrix of seeded
uniform values over `--repeats` repeats, and the same work through scipy.stats.bootstrap
(percentile, vectorized) for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from _smoke import parse_args
from scipy import stats

from cuer_agent.metrics.stats import bootstrap_ci

SMOKE = {"resamples": 500, "repeats": 1}


def timed(fn: Callable[[], object], repeats: int) -> float:
    """The median wall time of `fn()` over `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=5000)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--metrics", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7)
    args = parse_args(parser, SMOKE)
    data = np.random.default_rng(0).random((args.metrics, args.examples))
    ours = timed(lambda: bootstrap_ci(data, n_resamples=args.resamples, seed=42), args.repeats)
    ref = timed(lambda: [stats.bootstrap((row,), np.mean, n_resamples=args.resamples,
                                         method="percentile", vectorized=True,
                                         rng=np.random.default_rng(42)) for row in data],
                args.repeats)
    print(f"bootstrap_ci, {args.resamples} resamples x {args.examples} examples x "
          f"{args.metrics} metrics: {ours * 1000:.0f} ms "
          f"(scipy.stats.bootstrap, same work: {ref * 1000:.0f} ms; median of "
          f"{args.repeats})")


if __name__ == "__main__":
    main()

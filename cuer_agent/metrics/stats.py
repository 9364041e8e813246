"""Statistics: percentile bootstrap CIs (plain and clustered) and paired tests.

* `bootstrap_ci` — vectorised percentile bootstrap of the mean, for one metric or a
  stack of metrics at once (rows), seeded (default 5000 resamples, seed 42).
* `cluster_bootstrap_ci` — resamples whole clusters (e.g. every fault on one example),
  since outcomes within a cluster are correlated.
* `wilson_interval` — the Wilson score interval of a proportion k/n (never zero-width,
  unlike a percentile bootstrap of 0/n or n/n).
* `sign_flip_test` — paired permutation test on per-example deltas (H0: symmetric about
  0), via `scipy.stats.permutation_test`; exact when 2^n is small.
* `mcnemar_exact` — McNemar's exact test for paired binary outcomes (binomial test on the
  discordant pairs), via `scipy.stats.binomtest`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_RESAMPLES = 5000
DEFAULT_SEED = 42

# scipy.stats is imported by the functions that use it, not here: it takes about a second
# of CPU to import, and every process that imports cuer_agent (each worker of a process
# pool, a command that never summarises) would pay it.


def bootstrap_ci(values: ArrayLike, *, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED, confidence: float = 0.95) -> NDArray[np.float64]:
    """Percentile CI of the mean. `values` of shape (n,) gives [lo, hi]; shape (m, n) gives
    one [lo, hi] row per metric, all metrics sharing the same resampled indices (paired)."""
    data = np.asarray(values, dtype=np.float64)
    single = data.ndim == 1
    data = np.atleast_2d(data)
    n = data.shape[1]
    if n == 0:
        out = np.full((data.shape[0], 2), np.nan)
        return out[0] if single else out
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    means = data[:, idx].mean(axis=2)  # (m, n_resamples)
    tail = (1.0 - confidence) / 2.0
    rows: NDArray[np.float64] = np.quantile(means, [tail, 1.0 - tail], axis=1).T
    return rows[0] if single else rows


def cluster_bootstrap_ci(values: ArrayLike, clusters: Sequence[object], *,
                         n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                         confidence: float = 0.95) -> NDArray[np.float64]:
    """Percentile CI of the mean when observations come in correlated clusters: each
    resample draws clusters with replacement and pools their observations."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return np.array([np.nan, np.nan])
    labels, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    sums = np.bincount(inverse, weights=data, minlength=len(labels))
    counts = np.bincount(inverse, minlength=len(labels)).astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(labels), size=(n_resamples, len(labels)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    ci: NDArray[np.float64] = np.quantile(means, [tail, 1.0 - tail])
    return ci


MIN_CELL = 10
"""A cell (condition, fault × hop, diagnoser × depth) with fewer observations is
descriptive only: its figures are shown, no verdict is drawn from them."""


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion successes/n (rounded to 6 decimals)."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return round(max(0.0, float(centre - half)), 6), round(min(1.0, float(centre + half)), 6)


def sign_flip_test(deltas: ArrayLike, *, n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value that the mean paired delta is 0 (sign-flip permutation)."""
    from scipy import stats

    data = np.asarray(deltas, dtype=np.float64)
    if data.size < 2 or not np.any(data):
        # One pair: its two sign flips have the same |mean|, so the exact p-value is 1
        # (scipy refuses a single observation).
        return 1.0
    result = stats.permutation_test((data,), np.mean, permutation_type="samples",
                                    n_resamples=n_resamples, alternative="two-sided",
                                    rng=np.random.default_rng(seed))
    return float(min(1.0, result.pvalue))


def mcnemar_exact(before: ArrayLike, after: ArrayLike) -> float:
    """Exact McNemar p-value for paired binary outcomes (1 = correct)."""
    from scipy import stats

    a = np.asarray(before, dtype=bool)
    b = np.asarray(after, dtype=bool)
    lost = int(np.sum(a & ~b))
    gained = int(np.sum(~a & b))
    if lost + gained == 0:
        return 1.0
    return float(stats.binomtest(lost, lost + gained, 0.5).pvalue)


def bound_digits(value: float, digits: int = 3) -> int:
    """`digits`, or more (up to 8) until a nonzero `value` no longer rounds to 0: a CI
    bound printed for a decision on its sign ("excludes 0") must show that sign."""
    while value and round(value, digits) == 0 and digits < 8:
        digits += 1
    return digits

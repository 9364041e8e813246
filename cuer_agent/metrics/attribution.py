"""Fault-attribution metrics: how well a diagnoser localises a certified injected fault.

Input is one `Attribution` per failed trace: a fault was injected at hop h (`true_hop`,
certified), the agent re-executed the later hops and is *still wrong* (the set F_h), and
a diagnoser predicted (`pred_hop`, `pred_stage`) at a cost of `calls` / `tokens`.
`pred_hop is None` means the diagnoser errored on that trace: it is never dropped, it
counts as wrong for every correctness metric and is reported under `errors`.

Definitions (1[.] is the indicator, means over the items given):

* exact-hop accuracy  Acc(h) = mean over F_h of 1[pred_hop == h] — **integer equality**
  (never substring / string matching: a prediction of 1 must not match h = 10);
* stage accuracy      mean 1[pred_stage == true_stage];
* hop tolerance       mean 1[|pred_hop - h| <= 1];
* ancestor hit        mean 1[1 <= pred_hop <= h and pred_stage == true_stage];
* names a wrong hop   mean 1[pred_hop in wrong_hops], where a natural failure's label
  gives every hop's verdict: its wrong hops and its first error (h);
* MAE                 mean |pred_hop - h| over the non-error items only;
* cost per correct    total calls (tokens) over all diagnoses / number of exact-hop
  correct diagnoses (None if there is none);
* chance baseline     a diagnoser that picks a hop uniformly from 1..n_hops of the
  observed trace is right with probability 1/n_hops if 1 <= h <= n_hops, else 0
  (e.g. h = n_hops + 1, premature termination, is unreachable); its expected exact-hop
  accuracy is the mean of that probability over the items (per depth and overall).

Every accuracy is a proportion, and its `ci` is the 95% Wilson interval
(`stats.wilson_interval`: never zero-width, unlike a percentile bootstrap of 0/n or
n/n); `ci_clustered` resamples whole examples (`stats.cluster_bootstrap_ci`, clusters =
`example_id`), since the faults injected into one example are correlated. The MAE, not a
proportion, keeps a percentile bootstrap. Cells (per depth, per fault × depth) with fewer
than `min_cell` items are flagged `descriptive_only`. All outputs are JSON-native, rounded to
6 decimals, deterministic (seeded numpy); NaN / undefined values become None.

This module gives the primitives of these metrics (`indicator`, `mean`, `wilson`,
`clustered_interval`, `mean_interval`, `hop_errors`, `per`, `group`) and the baselines;
the study assembles them into its summary's model, declared once
(`cuer_agent.studies.diagnose.summary.attribution_scores`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from cuer_agent.metrics.stats import (
    MIN_CELL,
    bootstrap_ci,
    cluster_bootstrap_ci,
    wilson_interval,
)

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 42
DEFAULT_MIN_CELL = MIN_CELL
_DIGITS = 6

__all__ = ["Attribution", "ChanceAccuracy", "IndependenceBaseline", "Resampling",
           "blame_histogram", "chance_expected_accuracy",
           "clustered_interval", "group", "hop_errors", "independence_baseline", "indicator",
           "mean", "mean_interval", "per", "rounded", "wilson"]

Interval = list[float]
"""[low, high] of a 95% interval."""


class IndependenceBaseline(TypedDict):
    """The independence baseline overall and per depth (see `independence_baseline`)."""

    overall: float | None
    by_depth: dict[str, float]


class ChanceDepth(TypedDict):
    """Expected exact-hop accuracy of a uniform hop at one depth."""

    n: int
    expected_acc: float | None


class ChanceAccuracy(TypedDict):
    """What `chance_expected_accuracy` returns."""

    n: int
    expected_acc: float | None
    by_depth: dict[str, ChanceDepth]


class Resampling(TypedDict):
    """The bootstrap settings every interval of one summary shares."""

    n_resamples: int
    seed: int


def _as_int(value: object, name: str, *, optional: bool = False) -> int | None:
    """A genuine integer (numpy integers accepted; bool, float and str rejected)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    return operator.index(value)


@dataclass(frozen=True)
class Attribution:
    """One diagnosis of one failed trace (see the module docstring)."""

    example_id: str
    fault: str
    true_hop: int
    true_stage: str
    n_hops: int
    pred_hop: int | None
    pred_stage: str | None
    calls: int = 0
    tokens: int = 0
    wrong_hops: tuple[int, ...] | None = None
    """Every hop the label calls wrong, with the first error (None: the label gives only
    the first error)."""

    def __post_init__(self) -> None:
        # Hops are integers, compared with ==; a "10" string sneaking in would re-open the
        # substring-matching bug, so refuse anything that is not an int.
        for name in ("true_hop", "n_hops", "calls", "tokens"):
            object.__setattr__(self, name, _as_int(getattr(self, name), name))
        object.__setattr__(self, "pred_hop", _as_int(self.pred_hop, "pred_hop", optional=True))
        if self.calls < 0 or self.tokens < 0:
            raise ValueError("calls and tokens must be non-negative")

    @property
    def errored(self) -> bool:
        return self.pred_hop is None

    @property
    def hop_correct(self) -> bool:
        return self.pred_hop is not None and self.pred_hop == self.true_hop

    @property
    def stage_correct(self) -> bool:
        return self.pred_hop is not None and self.pred_stage == self.true_stage

    @property
    def hop_within_one(self) -> bool:
        return self.pred_hop is not None and abs(self.pred_hop - self.true_hop) <= 1

    @property
    def ancestor_hit(self) -> bool:
        return (self.pred_hop is not None and 1 <= self.pred_hop <= self.true_hop
                and self.pred_stage == self.true_stage)

    @property
    def names_wrong_hop(self) -> bool:
        """It names a hop the label calls wrong (False without `wrong_hops`)."""
        return (self.pred_hop is not None and self.wrong_hops is not None
                and self.pred_hop in self.wrong_hops)

    @property
    def chance_hit_probability(self) -> float:
        """P(uniform pick from 1..n_hops == true_hop)."""
        return 1.0 / self.n_hops if 1 <= self.true_hop <= self.n_hops else 0.0


# ------------------------------------------------------------ primitives a study builds from

def rounded(value: float | np.floating | None) -> float | None:
    """`value` rounded to 6 decimals; None for None or NaN."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else round(value, _DIGITS)


def _interval(ci: NDArray[np.float64]) -> Interval | None:
    lo, hi = (rounded(x) for x in ci)
    return None if lo is None or hi is None else [lo, hi]


def indicator(items: Sequence[Attribution], outcome: str) -> NDArray[np.float64]:
    """`outcome` (a property of `Attribution`: `hop_correct`, `stage_correct`…) of each
    item, as a float array."""
    return np.fromiter((getattr(it, outcome) for it in items), dtype=np.float64,
                       count=len(items))


def mean(values: NDArray[np.float64]) -> float | None:
    """The mean of `values` (a share, for a 0/1 indicator), rounded; None without any."""
    return rounded(values.mean()) if values.size else None


def wilson(hits: NDArray[np.float64]) -> Interval | None:
    """The Wilson interval of a 0/1 indicator's mean; None without items."""
    return list(wilson_interval(int(hits.sum()), int(hits.size))) if hits.size else None


def clustered_interval(hits: NDArray[np.float64], items: Sequence[Attribution],
                       **resampling: Unpack[Resampling]) -> Interval | None:
    """A bootstrap interval of the mean of `hits` (one per item) resampling whole
    examples (clusters = `example_id`); None without items."""
    if hits.size == 0:
        return None
    return _interval(cluster_bootstrap_ci(hits, [it.example_id for it in items], **resampling))


def mean_interval(values: NDArray[np.float64], **resampling: Unpack[Resampling]
                  ) -> Interval | None:
    """The percentile-bootstrap interval of the mean of `values`; None without any."""
    return _interval(bootstrap_ci(values, **resampling)) if values.size else None


def hop_errors(items: Sequence[Attribution]) -> NDArray[np.float64]:
    """|pred_hop - true_hop| of the non-error items (what MAE averages)."""
    return np.array([abs(it.pred_hop - it.true_hop) for it in items
                     if it.pred_hop is not None], dtype=np.float64)


def per(total: int, count: int) -> float | None:
    """`total / count` rounded (a cost per diagnosis or per correct one); None for 0."""
    return rounded(total / count) if count else None


def group(items: Sequence[Attribution], key: str) -> dict[Any, list[Attribution]]:
    """`items` by the value of their field `key` (`true_hop`, `fault`), in key order."""
    groups: dict[Any, list[Attribution]] = {}
    for it in items:
        groups.setdefault(getattr(it, key), []).append(it)
    return dict(sorted(groups.items()))


# ----------------------------------------------------------------------------- baselines

def blame_histogram(items: Sequence[Attribution]) -> dict[str, float | None]:
    """For each hop a diagnoser named, the share of its (non-error) diagnoses naming it."""
    named = [it.pred_hop for it in items if it.pred_hop is not None]
    return {str(h): rounded(named.count(h) / len(named)) for h in sorted(set(named))}


def independence_baseline(items: Sequence[Attribution]) -> IndependenceBaseline:
    """What a diagnoser scores if its predictions are independent of the true hop but keep
    their own distribution: Σ_h P(pred = h)·P(true = h), with P(pred) the diagnoser's
    blame histogram over all the failed traces and P(true) that of the cell. Within a
    depth d, P(true = h) = 1[h = d], so the baseline at depth d is P(pred = d).

    Returns {"overall": float, "by_depth": {str(d): float}}."""
    hist = blame_histogram(items)
    depths = group(items, "true_hop")
    n = len(items)
    overall = sum((hist.get(str(d)) or 0.0) * len(cell) / n for d, cell in depths.items())
    return {"overall": rounded(overall) if n else None,
            "by_depth": {str(d): hist.get(str(d)) or 0.0 for d in depths}}


def chance_expected_accuracy(items: Sequence[Attribution]) -> ChanceAccuracy:
    """Expected exact-hop accuracy of a uniform-random hop picker (analytic, no sampling):
    mean over items of 1/n_hops if 1 <= true_hop <= n_hops else 0, per depth and overall.

    Returns {"n", "expected_acc", "by_depth": {str(h): {"n", "expected_acc"}}}."""
    items = list(items)
    p = indicator(items, "chance_hit_probability")
    return {
        "n": len(items),
        "expected_acc": rounded(p.mean()) if items else None,
        "by_depth": {
            str(hop): {"n": len(cell),
                       "expected_acc": rounded(indicator(cell, "chance_hit_probability").mean())}
            for hop, cell in group(items, "true_hop").items()
        },
    }

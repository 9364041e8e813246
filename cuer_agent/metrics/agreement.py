"""Scores a constant cannot game: balanced accuracy over depths and Cohen's κ.

Pooled exact-hop accuracy rewards a diagnoser that always names the most common depth:
where most failures start at hop 1, the constant `first-hop` ties the best diagnoser. Two
scores that a constant cannot reach:

* **balanced accuracy** — the mean of the per-depth accuracies over the labelled depths
  with at least `MIN_DEPTH` failures (the answer step, hop 0, and a stop, hop n+1, are
  depths of their own). A constant scores 1 at its depth and 0 elsewhere: 1/k over k
  depths;
* **Cohen's κ** between the diagnoser's hops and the labelled ones over the failed
  traces: agreement beyond what the two marginals give by chance. A constant scores 0.

A diagnosis that names no hop (an error, or an abstention: stage `none`) is a category of
its own, never hop 0 — so here a right answer is the labelled hop named (an abstention
at a trace labelled hop 0 is wrong, where `exact_hop_acc` counts it right).

Each comes with a 95 % percentile interval from a bootstrap that resamples whole
examples (clusters), as `clustered_interval` does; seeded, so the same rows give the same
bytes. `constant` says whether a diagnoser names one hop on at least `CONSTANT_SHARE` of
the failures: a figure it earns is its base rate's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cuer_agent.metrics.attribution import Attribution

MIN_DEPTH = 5
"""A labelled depth counts in balanced accuracy with at least this many failures."""
CONSTANT_SHARE = 0.9
"""Naming one hop on this share of the failures or more makes a diagnoser a constant."""
ABSTAIN = "abstain"


def truth(item: Attribution) -> str:
    return str(item.true_hop)


def named(item: Attribution) -> str:
    """The diagnoser's category: the hop it names, or `abstain` (an error, or stage none)."""
    if item.pred_hop is None or item.pred_stage == "none":
        return ABSTAIN
    return str(item.pred_hop)


@dataclass(frozen=True)
class Agreement:
    balanced: float | None
    balanced_ci: list[float] | None
    kappa: float | None
    kappa_ci: list[float] | None
    depths: tuple[str, ...]
    """The labelled depths balanced accuracy averages over."""
    constant: bool


def _tables(items: Sequence[Attribution]) -> tuple[list[str], NDArray[np.int64],
                                                   NDArray[np.int64], NDArray[np.int64]]:
    """Per example (cluster): the count of each true category, of each named category,
    and of each true category named right — over one category list."""
    cats = sorted({truth(it) for it in items} | {named(it) for it in items})
    index = {c: i for i, c in enumerate(cats)}
    examples = sorted({it.example_id for it in items})
    row = {e: i for i, e in enumerate(examples)}
    true_n = np.zeros((len(examples), len(cats)), dtype=np.int64)
    named_n = np.zeros_like(true_n)
    right_n = np.zeros_like(true_n)
    for it in items:
        r, t, p = row[it.example_id], index[truth(it)], index[named(it)]
        true_n[r, t] += 1
        named_n[r, p] += 1
        right_n[r, t] += int(t == p)
    return cats, true_n, named_n, right_n


def _balanced(true_n: NDArray[np.int64], right_n: NDArray[np.int64],
              columns: list[int]) -> NDArray[np.float64]:
    """Balanced accuracy of each row of summed tables (rows: resamples)."""
    if not columns:
        return np.full(true_n.shape[0], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = right_n[:, columns] / true_n[:, columns]
    out: NDArray[np.float64] = np.nanmean(acc, axis=1)
    return out


def _kappa(true_n: NDArray[np.int64], named_n: NDArray[np.int64],
           right_n: NDArray[np.int64]) -> NDArray[np.float64]:
    """Cohen's κ of each row of summed tables (nan where chance agreement is 1)."""
    n = true_n.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = right_n.sum(axis=1) / n
        expected = (true_n * named_n).sum(axis=1) / (n * n)
        out: NDArray[np.float64] = np.where(expected < 1.0, (observed - expected)
                                            / (1.0 - expected), np.nan)
    return out


def _round(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 6)


def _ci(values: NDArray[np.float64]) -> list[float] | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    low, high = np.quantile(values, [0.025, 0.975])
    return [round(float(low), 6), round(float(high), 6)]


def agreement(items: Sequence[Attribution], *, n_resamples: int, seed: int) -> Agreement:
    """Balanced accuracy and κ of one diagnoser over its failed traces (see the module)."""
    if not items:
        return Agreement(None, None, None, None, (), False)
    cats, true_n, named_n, right_n = _tables(items)
    totals = true_n.sum(axis=0)
    columns = [i for i, c in enumerate(cats) if c != ABSTAIN and totals[i] >= MIN_DEPTH]
    whole = (true_n.sum(axis=0, keepdims=True), named_n.sum(axis=0, keepdims=True),
             right_n.sum(axis=0, keepdims=True))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, true_n.shape[0], size=(n_resamples, true_n.shape[0]))
    resampled = (true_n[idx].sum(axis=1), named_n[idx].sum(axis=1), right_n[idx].sum(axis=1))
    named_hops = [int(named_n[:, i].sum()) for i, c in enumerate(cats) if c != ABSTAIN]
    return Agreement(
        balanced=_round(_balanced(whole[0], whole[2], columns)[0]),
        balanced_ci=_ci(_balanced(resampled[0], resampled[2], columns)),
        kappa=_round(_kappa(*whole)[0]), kappa_ci=_ci(_kappa(*resampled)),
        depths=tuple(cats[i] for i in columns),
        constant=bool(named_hops) and max(named_hops) >= CONSTANT_SHARE * len(items))

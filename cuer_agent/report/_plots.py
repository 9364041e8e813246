"""The report's figures as PNG bytes, drawn with matplotlib's object API on the Agg
canvas (no pyplot, no global backend switch). Sizes, style and DPI are fixed and the PNG
carries no software or date metadata, so the same summary gives the same bytes.

Every function returns None when its part of the summary has nothing to draw."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from cuer_agent.report._format import hop_key

DPI = 100
SIZE = (7.0, 3.8)
_STYLE: dict[str, Any] = {"font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                          "axes.axisbelow": True, "svg.hashsalt": "cuer-agent",
                          "path.simplify": False}
MAIN_OPERATORS = ("remove", "replace", "duplicate", "zero_retrieval", "random_target")
CUER_AXES = ("correctness", "grounding", "confidence_error", "divergence")


@contextmanager
def _style() -> Iterator[None]:
    """matplotlib's defaults plus ours, whatever the user's matplotlibrc says."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(_STYLE)  # type: ignore[arg-type]
        yield


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _yerr(values: list[float], cis: list[Any]) -> list[list[float]]:
    """Asymmetric error bars from `[lo, hi]` (zero length where the CI is missing)."""
    lower, upper = [], []
    for value, bounds in zip(values, cis, strict=True):
        ok = isinstance(bounds, list | tuple) and len(bounds) == 2 and None not in bounds
        lower.append(max(0.0, value - bounds[0]) if ok else 0.0)
        upper.append(max(0.0, bounds[1] - value) if ok else 0.0)
    return [lower, upper]


def _lines_by_depth(series: dict[str, dict[str, dict[str, Any]]], value_key: str,
                    ylabel: str, title: str, note: str) -> bytes | None:
    """One line per series over hop depth, CI error bars; hollow markers = descriptive only."""
    drawable = {name: {h: c for h, c in cells.items()
                       if isinstance(c, dict) and c.get(value_key) is not None}
                for name, cells in series.items()}
    drawable = {name: cells for name, cells in drawable.items() if cells}
    if not drawable:
        return None
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        width = 0.5 / max(1, len(drawable))
        depths: set[int] = set()
        for i, (name, cells) in enumerate(drawable.items()):
            keys = sorted((h for h in cells if str(h).isdigit()), key=hop_key)
            if not keys:
                continue
            offset = (i - (len(drawable) - 1) / 2) * width
            xs = [int(h) + offset for h in keys]
            depths.update(int(h) for h in keys)
            ys = [float(cells[h][value_key]) for h in keys]
            err = _yerr(ys, [cells[h].get("ci") for h in keys])
            line = ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
            colour = line.lines[0].get_color()
            hollow = [(x, y) for h, x, y in zip(keys, xs, ys, strict=True)
                      if cells[h].get("descriptive_only")]
            if hollow:
                ax.plot([p[0] for p in hollow], [p[1] for p in hollow], "o", color=colour,
                        markerfacecolor="white", zorder=3)
        ax.set_xticks(sorted(depths))
        ax.set_xlabel(f"hop depth of the fault ({note})")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(title)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return _png(fig)


def exact_hop_by_depth(diagnosers: dict[str, Any]) -> bytes | None:
    """Exact-hop accuracy vs fault depth per diagnoser, 95% CI error bars."""
    series = {name: d.get("by_depth") or {} for name, d in diagnosers.items()
              if isinstance(d, dict)}
    return _lines_by_depth(series, "acc", "exact-hop accuracy",
                           "Exact-hop accuracy by fault depth (failed traces)",
                           "hollow: < 10 failed traces, descriptive only")


def recovery_by_depth(faults: dict[str, Any]) -> bytes | None:
    """Recovery (correct after re-execution) vs fault depth per fault, 95% CI error bars."""
    return _lines_by_depth({k: v for k, v in faults.items() if isinstance(v, dict)},
                           "recovery", "recovery = P(correct | fault at h)",
                           "Recovery after a fault at hop h",
                           "hollow: < 10 failed traces, descriptive only")


def cuer_deltas(conditions: dict[str, Any]) -> bytes | None:
    """Grouped bars: per operator, Δ on each axis with its 95% CI (Δ > 0: it hurt)."""
    ops = [op for op in MAIN_OPERATORS if (conditions.get(op) or {}).get("delta")]
    if not ops:
        return None
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        width = 0.8 / len(CUER_AXES)
        for j, axis in enumerate(CUER_AXES):
            cells = [conditions[op]["delta"].get(axis) or {} for op in ops]
            ys = [float(c["mean"]) if c.get("mean") is not None else 0.0 for c in cells]
            xs = [i + (j - (len(CUER_AXES) - 1) / 2) * width for i in range(len(ops))]
            label = "D (vs original)" if axis == "divergence" else f"Δ{axis}"
            ax.bar(xs, ys, width, yerr=_yerr(ys, [c.get("ci") for c in cells]), capsize=2,
                   label=label)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(ops)), ops)
        ax.set_ylabel("Δ = U(original) − U(counterfactual)")
        ax.set_title("Single-shot CUE-R: deltas per operator and axis (> 0: it hurt)")
        ax.legend(fontsize=8, loc="best")
        return _png(fig)


def role_distribution(items: dict[str, int], order: tuple[str, ...]) -> bytes | None:
    """Bars: how many CUE-R targets got each evidence-role label."""
    if not items:
        return None
    labels = [k for k in order if k in items] + sorted(k for k in items if k not in order)
    counts = [int(items[k] or 0) for k in labels]
    total = sum(counts) or 1
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        bars = ax.bar(labels, counts, color="#4c72b0")
        ax.bar_label(bars, [f"{c} ({c / total:.0%})" for c in counts], fontsize=8)
        ax.set_ylabel("targets")
        ax.set_title(f"Evidence roles of the CUE-R targets (n = {sum(counts)})")
        ax.tick_params(axis="x", labelsize=8)
        return _png(fig)


def cost_per_correct(diagnosers: dict[str, Any]) -> bytes | None:
    """Bars: backend calls per correct localisation, per diagnoser ("n/a": none correct)."""
    names = [n for n, d in diagnosers.items() if isinstance(d, dict)]
    if not names:
        return None
    values = [((diagnosers[n].get("cost_per_correct") or {}).get("calls")) for n in names]
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        heights = [float(v) if v is not None else 0.0 for v in values]
        bars = ax.bar(names, heights, color="#55a868")
        ax.bar_label(bars, [f"{v:.2f}" if v is not None else "n/a" for v in values],
                     fontsize=8)
        ax.set_ylabel("backend calls per correct diagnosis")
        ax.set_title("Cost per correct diagnosis (calls; 0 calls = no model used)")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        return _png(fig)

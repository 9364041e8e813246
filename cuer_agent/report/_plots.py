"""The report's figures as PNG bytes, drawn with matplotlib's object API on the Agg
canvas (no pyplot, no global backend switch). Sizes, style and DPI are fixed and the PNG
carries no software or date metadata, so the same summary gives the same bytes.

Every function returns None when its part of the summary has nothing to draw."""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from cuer_agent.studies._common.summary_model import Interval, hop_key
from cuer_agent.studies.cuer.summary_model import CuerCondition, DeltaStat
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.propagation.summary_model import FaultCell

DPI = 100
SIZE = (7.0, 3.8)
_STYLE: dict[str, object] = {"font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
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


def _yerr(values: list[float], cis: list[Interval | None]) -> list[list[float]]:
    """Asymmetric error bars from `[lo, hi]` (zero length where the CI is missing)."""
    lower, upper = [], []
    for value, bounds in zip(values, cis, strict=True):
        lower.append(0.0 if bounds is None else max(0.0, value - bounds[0]))
        upper.append(0.0 if bounds is None else max(0.0, bounds[1] - value))
    return [lower, upper]


Point = tuple[float, Interval | None, bool]
"""A value on a line, its interval, and whether it is descriptive only."""


def _lines_by_depth(series: Mapping[str, Mapping[str, Point]], ylabel: str, title: str,
                    note: str) -> bytes | None:
    """One line per series over hop depth, CI error bars; hollow markers = descriptive only."""
    drawable = {name: points for name, points in series.items() if points}
    if not drawable:
        return None
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        width = 0.5 / max(1, len(drawable))
        depths: set[int] = set()
        for i, (name, points) in enumerate(drawable.items()):
            keys = sorted(points, key=hop_key)
            offset = (i - (len(drawable) - 1) / 2) * width
            xs = [int(h) + offset for h in keys]
            depths.update(int(h) for h in keys)
            ys = [points[h][0] for h in keys]
            err = _yerr(ys, [points[h][1] for h in keys])
            line = ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
            colour = line.lines[0].get_color()
            hollow = [(x, y) for h, x, y in zip(keys, xs, ys, strict=True) if points[h][2]]
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


FAMILY_COLOURS = {"gold-free": "#1f6fb4", "reads gold": "#8c56b0",
                  "oracle probes": "#c8382c", "controls": "#6f6f6f"}
MEMBER_STYLES: tuple[tuple[str, Any], ...] = (
    ("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", (0, (5, 1))), ("P", (0, (1, 1))))
"""A family's members differ by marker and line style; a family never draws more
members than there are styles (the caption names any left out)."""
REFERENCES = ("trace-rule", "chance")
"""Controls drawn in every other family's panel, as the line to beat."""


def exact_hop_families(diagnosers: Mapping[str, DiagnoserSummary],
                       families: dict[str, list[str]]) -> tuple[bytes, list[str]] | None:
    """Exact-hop accuracy vs fault depth, one panel per family (colour = family, marker and
    line style = member), the controls `trace-rule` and `chance` in grey in every panel;
    95% Wilson intervals. Returns the PNG and the members left out (more than the styles)."""
    panels = [(f, members) for f, members in families.items() if members]
    if not panels:
        return None
    left_out = [m for _, members in panels for m in members[len(MEMBER_STYLES):]]
    control_style = {n: MEMBER_STYLES[i] for i, n in enumerate(families.get("controls", []))
                     if i < len(MEMBER_STYLES)}
    with _style():
        fig = Figure(figsize=(7.0, 4.6), layout="constrained")
        axes = fig.subplots(2, 2, sharex=True, sharey=True).ravel()
        for ax, (name, members) in zip(axes, panels, strict=False):
            drawn = [(m, FAMILY_COLOURS[name], MEMBER_STYLES[i], 1.6)
                     for i, m in enumerate(members[:len(MEMBER_STYLES)])]
            if name != "controls":
                drawn += [(r, FAMILY_COLOURS["controls"], control_style[r], 0.9)
                          for r in REFERENCES if r in control_style]
            for member, colour, (marker, dash), width in drawn:
                accuracy = {h: (c.acc, c.ci) for h, c in diagnosers[member].by_depth.items()
                            if c.acc is not None}
                keys = sorted(accuracy, key=hop_key)
                if not keys:
                    continue
                ys = [accuracy[h][0] for h in keys]
                ax.errorbar([int(h) for h in keys], ys,
                            yerr=_yerr(ys, [accuracy[h][1] for h in keys]), color=colour,
                            marker=marker, linestyle=dash, linewidth=width, markersize=4,
                            capsize=2, label=member)
            ax.set_title(name, fontsize=9, color=FAMILY_COLOURS[name])
            ax.set_ylim(-0.05, 1.05)
            if ax.get_legend_handles_labels()[0]:  # a family with nothing drawn: no legend
                ax.legend(fontsize=7, loc="best")
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        for ax in axes:
            ax.set_xticks(sorted({int(h) for d in diagnosers.values() for h in d.by_depth}))
        fig.supxlabel("hop depth of the fault", fontsize=9)
        fig.supylabel("exact-hop accuracy", fontsize=9)
        return _png(fig), left_out


def recovery_by_depth(faults: Mapping[str, Mapping[str, FaultCell]]) -> bytes | None:
    """Recovery (correct after re-execution) vs fault depth per fault, 95% CI error bars."""
    return _lines_by_depth({fault: {h: (c.recovery, c.ci, c.descriptive_only)
                                    for h, c in per_hop.items() if c.recovery is not None}
                            for fault, per_hop in faults.items()},
                           "recovery = P(correct | fault at h)",
                           "Recovery after a fault at hop h",
                           "hollow: < 10 failed traces, descriptive only")


def cuer_deltas(conditions: Mapping[str, CuerCondition]) -> bytes | None:
    """Grouped bars: per operator, Δ on each axis with its 95% CI (Δ > 0: it hurt)."""
    deltas = [(op, delta) for op in MAIN_OPERATORS
              if (cond := conditions.get(op)) is not None and (delta := cond.delta) is not None]
    if not deltas:
        return None
    ops = [op for op, _ in deltas]
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        width = 0.8 / len(CUER_AXES)
        for j, axis in enumerate(CUER_AXES):
            cells: list[DeltaStat] = [getattr(d, axis) for _, d in deltas]
            ys = [c.mean if c.mean is not None else 0.0 for c in cells]
            xs = [i + (j - (len(CUER_AXES) - 1) / 2) * width for i in range(len(ops))]
            label = "D (vs original)" if axis == "divergence" else f"Δ{axis}"
            ax.bar(xs, ys, width, yerr=_yerr(ys, [c.ci for c in cells]), capsize=2,
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


def cost_per_correct(diagnosers: Mapping[str, DiagnoserSummary]) -> bytes | None:
    """Bars: backend calls per correct localisation, per diagnoser ("n/a": none correct)."""
    names = [n for n, d in diagnosers.items() if d.calls_per_diagnosis]  # no calls: no cost
    if not names:
        return None
    values = [diagnosers[n].cost_per_correct.calls for n in names]
    with _style():
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        heights = [float(v) if v is not None else 0.0 for v in values]
        bars = ax.bar(names, heights, color="#55a868")
        ax.bar_label(bars, [f"{v:.2f}" if v is not None else "n/a" for v in values],
                     fontsize=8)
        ax.set_ylabel("backend calls per correct diagnosis")
        ax.set_title("Cost per correct diagnosis (calls; diagnosers that make none left out)")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        return _png(fig)

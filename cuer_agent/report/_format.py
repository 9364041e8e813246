"""Number formatting shared by the tables and the prose: one place, so md and html agree."""

from __future__ import annotations

from typing import Any

from cuer_agent.metrics.stats import bound_digits
from cuer_agent.studies._common.summary_model import Interval, MeanCI

DASH = "—"


def num(value: Any, digits: int = 3) -> str:
    """A number with fixed digits, or a dash when it is missing."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:.{digits}f}"


def signed(value: Any, digits: int = 3) -> str:
    """A number with an explicit sign (deltas), or a dash."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:+.{digits}f}"


def pval(value: Any) -> str:
    """A p-value: `<0.001` below one in a thousand, a dash when missing."""
    if value is None or not isinstance(value, int | float):
        return DASH
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def ci(bounds: Interval | None, digits: int = 3, *, sign: bool = False) -> str:
    """A confidence interval `[lo, hi]`, or an empty string when there is none. A bound
    that is not 0 never prints as 0: it gets the digits that show its sign, because
    decisions ("excludes 0") are taken on the unrounded bound."""
    if bounds is None:
        return ""
    fmt = signed if sign else num
    return (f"[{fmt(bounds[0], bound_digits(bounds[0], digits))}, "
            f"{fmt(bounds[1], bound_digits(bounds[1], digits))}]")


def mean_ci(stat: MeanCI, digits: int = 3, *, sign: bool = False) -> str:
    """`mean [lo, hi]` of a mean with its interval; a dash when the mean is null."""
    if stat.mean is None:
        return DASH
    fmt = signed if sign else num
    return f"{fmt(stat.mean, digits)} {ci(stat.ci, digits, sign=sign)}".rstrip()


def share(count: Any, total: Any) -> str:
    """`count (share)`, the share to two digits; the bare count when the total is 0."""
    if not isinstance(count, int | float):
        return DASH
    if not total:
        return str(count)
    return f"{count} ({count / total:.2f})"

"""What `evaluate` leads with: per fault × depth, recovery beside its control, and the
best gold-free diagnoser beside `trace-rule`, chance and the best oracle probe.

Diagnosers fall into families by what they declare (`family`): *controls* (declared
`control`: chance, trace-rule, first-hop, last-hop — what any trace would score),
*oracle probes* (they re-run hops against a clean tool or judge a repair by the gold
answer: an upper bound no deployed user has), *reads gold* (the gold answer is in their
view) and *gold-free* (the trace alone: what a builder can deploy). The headline picks the
gold-free and the oracle-probe diagnoser with the best pooled exact-hop accuracy, once for
the whole table (a choice per cell would select on noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuer_agent.studies._common.cells import hop_key

FAMILIES = ("gold-free", "reads gold", "oracle probes", "controls")


def family(d: dict[str, Any]) -> str:
    """A diagnoser's family, from its declarations in the summary."""
    if d.get("control"):
        return "controls"
    if d.get("uses_environment_oracle") or d.get("uses_gold_oracle"):
        return "oracle probes"
    return "reads gold" if d.get("uses_gold") else "gold-free"


def best_of(diagnosers: dict[str, Any], wanted: str) -> str | None:
    """The member of family `wanted` with the best pooled exact-hop accuracy (ties: the
    first name in order), or None when the family has none with an accuracy."""
    scored = [(-float(acc), name) for name, d in sorted(diagnosers.items())
              if isinstance(d, dict) and family(d) == wanted
              and (acc := (d.get("exact_hop_acc") or {}).get("mean")) is not None]
    return min(scored)[1] if scored else None


@dataclass(frozen=True)
class Cell:
    """One accuracy (or recovery) with its 95% Wilson interval and its n."""

    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None


@dataclass(frozen=True)
class HeadlineRow:
    fault: str
    depth: str
    recovery: Cell
    """Recovery over the effective injections (hop h's first attempt changed)."""
    control: Cell
    """The same injections with the agent's retries off."""
    forced: bool
    """The fault is a stop the agent did not choose: its recovery is not the agent's."""
    diagnosers: dict[str, Cell]
    """Column name (best gold-free, trace-rule, chance, best oracle probe) → exact-hop
    accuracy on this fault and depth's failed traces."""


@dataclass(frozen=True)
class Headline:
    best_gold_free: str | None
    best_oracle: str | None
    columns: tuple[str, ...]
    """The diagnosers in the table, in column order (those that ran)."""
    stand_ins: frozenset[str]
    """Those of them that are rule-based stand-ins."""
    rows: tuple[HeadlineRow, ...]


def headline(summary: dict[str, Any]) -> Headline:
    """The headline table's content, from the summary alone."""
    diagnosers = {n: d for n, d in (summary.get("diagnosers") or {}).items()
                  if isinstance(d, dict)}
    best = best_of(diagnosers, "gold-free")
    oracle = best_of(diagnosers, "oracle probes")
    columns = tuple(n for n in (best, "trace-rule", "chance", oracle)
                    if n is not None and n in diagnosers)
    rows = []
    faults = (summary.get("agentic") or {}).get("faults") or {}
    for fault, per_depth in faults.items():
        for depth in sorted(per_depth, key=hop_key):
            cell = per_depth[depth] or {}
            if not cell.get("injected"):
                continue
            given = cell.get("control")
            control: dict[str, Any] = given if isinstance(given, dict) else {}
            rows.append(HeadlineRow(
                fault=fault, depth=str(depth),
                recovery=Cell(cell.get("recovery_effective"),
                              _pair(cell.get("recovery_effective_ci")), cell.get("effective")),
                control=Cell(control.get("recovery"), _pair(control.get("ci")),
                             control.get("n")),
                forced=bool(cell.get("forced")),
                diagnosers={name: _accuracy(diagnosers[name], fault, str(depth))
                            for name in columns}))
    stand_ins = frozenset(n for n in columns if diagnosers[n].get("stand_in"))
    return Headline(best, oracle, columns, stand_ins, tuple(rows))


def _accuracy(d: dict[str, Any], fault: str, depth: str) -> Cell:
    cell = ((d.get("by_fault_depth") or {}).get(fault) or {}).get(depth) or {}
    return Cell(cell.get("acc"), _pair(cell.get("ci")), cell.get("n"))


def _pair(bounds: Any) -> tuple[float, float] | None:
    ok = isinstance(bounds, list | tuple) and len(bounds) == 2 and None not in bounds
    return (float(bounds[0]), float(bounds[1])) if ok else None

"""What `evaluate` leads with: per fault × depth, recovery beside its control, and the
best gold-free diagnoser beside `trace-rule`, chance and the best oracle probe.

Diagnosers fall into families by what they declare (`family`): *controls* (declared
`control`: chance, trace-rule, first-hop, last-hop — what any trace would score),
*oracle probes* (they re-run hops against a clean tool or judge a repair by the gold
answer: an upper bound no deployed user has), *reads gold* (the gold answer is in their
view) and *gold-free* (the trace alone: what a builder can deploy). The headline picks the
gold-free and the oracle-probe diagnoser with the best balanced accuracy (the mean of the
per-depth accuracies: a constant cannot win it, where pooled accuracy rewards naming the
commonest depth), once for the whole table (a choice per cell would select on noise),
over the injected and the natural failures together (the mean of the two balanced
figures; `natural`: the clean runs that ended wrong, labelled from the gold chain), whose
rows follow the injected ones; `first-hop`, the constant, is printed beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cuer_agent.studies._common.summary_model import Interval, hop_key
from cuer_agent.studies.diagnose.summary_model import DepthCell, DiagnoserSummary, FaultDepthCell
from cuer_agent.studies.propagation.summary_model import PropagationResults

FAMILIES = ("gold-free", "reads gold", "oracle probes", "controls")
FIRST_HOP = "first-hop"
"""The constant printed beside the best gold-free diagnoser: what naming hop 1 scores."""


def family(d: DiagnoserSummary) -> str:
    """A diagnoser's family, from its declarations in the summary."""
    if d.control:
        return "controls"
    if d.uses_environment_oracle or d.uses_gold_oracle:
        return "oracle probes"
    return "reads gold" if d.uses_gold else "gold-free"


def pooled(*summaries: DiagnoserSummary | None) -> float | None:
    """Exact-hop accuracy over the failed traces of every summary given (None: none)."""
    parts = [(d.exact_hop_acc.mean, d.n) for d in summaries
             if d is not None and d.exact_hop_acc.mean is not None and d.n]
    total = sum(n for _, n in parts)
    return sum(acc * n for acc, n in parts) / total if total else None


def balanced(*summaries: DiagnoserSummary | None) -> float | None:
    """The mean of the balanced accuracies of every summary given that has one."""
    values = [d.balanced.mean for d in summaries
              if d is not None and d.balanced.mean is not None]
    return sum(values) / len(values) if values else None


def best_of(diagnosers: Mapping[str, DiagnoserSummary], wanted: str,
            natural: Mapping[str, DiagnoserSummary] | None = None) -> str | None:
    """The member of family `wanted` with the best balanced accuracy over the injected
    failures and, when given, the natural ones (`balanced`; ties: the better pooled
    exact-hop accuracy, then the first name in order), or None when the family has none
    with an accuracy."""
    natural = natural or {}
    scored = [(-score, -(pooled(d, natural.get(name)) or 0.0), name)
              for name, d in sorted(diagnosers.items())
              if family(d) == wanted and (score := balanced(d, natural.get(name))) is not None]
    return min(scored)[2] if scored else None


@dataclass(frozen=True)
class Cell:
    """One accuracy (or recovery) with its 95% Wilson interval and its n."""

    value: float | None
    ci: Interval | None = None
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


def headline(diagnosers: Mapping[str, DiagnoserSummary], agentic: PropagationResults,
             natural: Mapping[str, DiagnoserSummary] | None = None) -> Headline:
    """The headline table's content, from the summary's diagnosers and agentic study, and
    the diagnosers scored on natural failures (one row per depth, after the faults)."""
    best = best_of(diagnosers, "gold-free", natural)
    oracle = best_of(diagnosers, "oracle probes")
    columns = tuple(dict.fromkeys(n for n in (best, FIRST_HOP, "trace-rule", "chance", oracle)
                                  if n is not None and n in diagnosers))
    rows = []
    for fault, per_depth in agentic.faults.items():
        for depth in sorted(per_depth, key=hop_key):
            cell = per_depth[depth]
            if not cell.injected:
                continue
            control = (Cell(None) if cell.control is None else
                       Cell(cell.control.recovery, cell.control.ci, cell.control.n))
            rows.append(HeadlineRow(
                fault=fault, depth=depth,
                recovery=Cell(cell.recovery_effective, cell.recovery_effective_ci,
                              cell.effective),
                control=control, forced=bool(cell.forced),
                diagnosers={name: _accuracy(diagnosers[name], fault, depth)
                            for name in columns}))
    rows += _natural_rows(natural or {}, columns)
    stand_ins = frozenset(n for n in columns if diagnosers[n].stand_in)
    return Headline(best, oracle, columns, stand_ins, tuple(rows))


def _accuracy(d: DiagnoserSummary, fault: str, depth: str) -> Cell:
    return _cell(d.by_fault_depth.get(fault, {}).get(depth))


def _cell(cell: FaultDepthCell | DepthCell | None) -> Cell:
    return Cell(None) if cell is None else Cell(cell.acc, cell.ci, cell.n)


NATURAL = "natural failures"
"""The `fault` of the headline rows of natural failures."""


def _natural_rows(natural: Mapping[str, DiagnoserSummary], columns: tuple[str, ...]
                  ) -> list[HeadlineRow]:
    """Per depth of the natural failures: the columns' exact-hop accuracy (no recovery:
    nothing was injected)."""
    depths = sorted({h for d in natural.values() for h in d.by_depth}, key=hop_key)
    return [HeadlineRow(fault=NATURAL, depth=depth, recovery=Cell(None), control=Cell(None),
                        forced=False,
                        diagnosers={name: _cell(natural[name].by_depth.get(depth)
                                                if name in natural else None)
                                    for name in columns})
            for depth in depths]

"""Tables of the evaluate summary's agentic part: recovery after a fault at hop h (over
every injection and over the effective ones, beside the retries-off control), by the
faulted fact's redundancy, certified tampering by hop, and the per-hop CUE-R operators.
Each function takes one part and returns a `Table` (or None when it holds nothing)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, mean_ci, num, share
from cuer_agent.report._render import Table
from cuer_agent.report._tables import DESCRIPTIVE
from cuer_agent.studies._common.summary_model import hop_key
from cuer_agent.studies.propagation.summary_model import FaultCell, HopOperatorCell, TamperingCell

Faults = Mapping[str, Mapping[str, FaultCell]]
"""Fault → injected hop → its cell (`PropagationResults.faults`)."""


def _recovery_cell(cell: FaultCell | None) -> str:
    if cell is None or not cell.injected:
        return DASH
    label = "correct after a forced stop " if cell.forced else ""
    text = (f"{label}{cell.recovered}/{cell.injected} = "
            f"{num(cell.recovery, 2)} {ci(cell.ci, 2)}").rstrip()
    text += DESCRIPTIVE if cell.descriptive_only else ""
    text += (f"; retried {cell.retried}, effective {cell.effective}"
             f" → {cell.recovered_effective}/{cell.effective}")
    hit = cell.first_hit
    if hit.later or hit.never:
        text += f"; first reached the agent later in {hit.later}, never in {hit.never}"
    if cell.errors:
        text += f"; {cell.errors} ended in an error or a parse failure (apart)"
    return text


def _effective_cell(cell: FaultCell | None) -> str:
    """Recovery over the effective injections, then the retries-off control."""
    if cell is None or not cell.effective:
        return DASH
    if cell.forced:
        return (f"forced stop: {cell.recovered}/{cell.injected} right "
                f"{ci(cell.ci, 2)}").rstrip()
    text = f"{num(cell.recovery_effective, 2)} {ci(cell.recovery_effective_ci, 2)}".rstrip()
    control = cell.control
    text += (f" | {num(control.recovery, 2)} {ci(control.ci, 2)}".rstrip()
             if control is not None else " | —")
    text += f" (n={cell.effective}, VERIFY {cell.verify_detected})"
    return text + (DESCRIPTIVE if cell.effective < 10 else "")


def _fault_by_hop(faults: Faults, cell: Callable[[FaultCell | None], str], *, caption: str,
                  footnote: str) -> Table | None:
    """A fault × injected-hop table (every hop any fault was injected at, in hop order),
    each cell rendered by `cell` (None where that fault has no injection at that hop)."""
    if not faults:
        return None
    hops = sorted({h for per_hop in faults.values() for h in per_hop}, key=hop_key)
    rows = tuple((fault, *(cell(per_hop.get(h)) for h in hops))
                 for fault, per_hop in faults.items())
    return Table(caption=caption, headers=("fault", *(f"hop {h}" for h in hops)), rows=rows,
                 footnote=footnote)


def recovery_effective(faults: Faults) -> Table | None:
    """The headline: fault × hop, recovery over effective injections with retries on |
    off (the control, same injections)."""
    return _fault_by_hop(
        faults, _effective_cell,
        caption="Recovery over effective injections: the agent [95% Wilson CI] | the same "
                "injections with its retries off (the control); n = effective injections, "
                "VERIFY = how many of them it flagged",
        footnote=(f"{DESCRIPTIVE} fewer than 10 effective injections: descriptive only. "
                  "Effective: hop h's first attempt found or selected something else than "
                  "in the clean run. The gap between the two figures is what the retry did; "
                  "where they agree, recovery would be the same without it."))


def redundancy(faults: Faults) -> Table | None:
    """Fault × redundancy of the faulted fact: recovery of effective injections."""
    rows = []
    for fault, per_hop in faults.items():
        pooled: dict[str, list[int]] = {}
        for cell in per_hop.values():
            for r, c in cell.by_redundancy.items():
                acc = pooled.setdefault(r, [0, 0])
                acc[0] += c.recovered
                acc[1] += c.n
        if pooled:
            rows.append((fault, *(f"{pooled[r][0]}/{pooled[r][1]}" if r in pooled else DASH
                                  for r in ("1", "2", "3"))))
    if not rows:
        return None
    return Table(caption="Recovery of effective injections by the faulted fact's redundancy "
                         "(in how many passages the world states it), pooled over hops",
                 headers=("fault", "stated in 1", "stated in 2", "stated in 3"),
                 rows=tuple(rows))



def recovery(faults: Faults) -> Table | None:
    """Fault × hop: recovered / injected, recovery(h) with its 95% CI."""
    return _fault_by_hop(
        faults, _recovery_cell,
        caption="Recovery after a fault at hop h (recovered/injected = recovery [95% Wilson "
                "CI]; runs that retried hop h; effective injections → recovered of them; runs "
                "that ended in a request error or a parse failure, counted apart)",
        footnote=(f"{DESCRIPTIVE} fewer than 10 injections: descriptive only. "
                  f"Reference — {ref.DIAG_SETUP}; {ref.RECOVERY_RANGES} (their setup, not "
                  "ours)."))


def tampering(by_hop: Mapping[str, TamperingCell]) -> Table | None:
    """Per hop: resisted / absorbed / derailed (shares of injected), query contamination,
    the certificate strategies, and the paper's shares at that depth."""
    if not by_hop:
        return None
    rows = []
    for h in sorted(by_hop, key=hop_key):
        c = by_hop[h]
        n = c.injected
        strategies = ", ".join(f"{k} {v}" for k, v in sorted(c.strategies.items()))
        paper = ref.TAMPERING_BY_DEPTH.get(h)
        paper_text = (f"{paper[0]:.2f} / {paper[1]:.2f} / {paper[2]:.2f} (n={paper[3]})"
                      if paper else DASH)
        rows.append((h, str(n), share(c.resisted, n), share(c.absorbed, n),
                     share(c.derailed, n), share(c.contaminated, n),
                     strategies or DASH, paper_text))
    return Table(caption="Certified content tampering by hop: outcome counts (share of injected)",
                 headers=("hop", "injected", "resisted", "absorbed", "derailed",
                          "query contaminated", "strategies",
                          "paper resisted / absorbed / derailed"),
                 rows=tuple(rows),
                 footnote=f"Paper column: {ref.DIAG_SETUP} — their setup, not ours.")


def hop_operators(ops: Mapping[str, Mapping[str, HopOperatorCell]]) -> Table | None:
    """Per-hop CUE-R operators in the agent: deltas and the multi-hop / plain D."""
    rows = []
    for op, by_hop in ops.items():
        for h in sorted(by_hop, key=hop_key):
            c = by_hop[h]
            rows.append((op, h, str(c.n), mean_ci(c.delta_correctness, sign=True),
                         mean_ci(c.delta_grounding, sign=True),
                         mean_ci(c.delta_confidence_error, sign=True),
                         mean_ci(c.divergence), num(c.divergence_cuer)))
    if not rows:
        return None
    return Table(caption="Per-hop CUE-R operators in the agent (Δ > 0: it hurt)",
                 headers=("operator", "hop", "n", "Δcorrect. [95% CI]", "Δground. [95% CI]",
                          "Δconf. err [95% CI]", "multi-hop D [95% CI]", "CUE-R D"),
                 rows=tuple(rows))


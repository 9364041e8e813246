"""Tables of the evaluate summary's diagnosers: exact-hop accuracy by depth, by fault and
depth, and by fault, what each diagnoser sees and costs, and the paper's reference
values. Each function takes the diagnosers' summaries (`Diagnosers`) and returns a
`Table` (or None when there is nothing to tabulate)."""

from __future__ import annotations

from collections.abc import Mapping

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, mean_ci, num
from cuer_agent.report._render import Table
from cuer_agent.report._tables import DESCRIPTIVE
from cuer_agent.studies._common.summary_model import hop_key
from cuer_agent.studies.diagnose.summary_model import Abstention, DiagnoserSummary

Diagnosers = Mapping[str, DiagnoserSummary]
"""Diagnoser name → its summary (`EvaluateSummary.diagnosers`)."""

_BEATS: dict[object, str] = {True: "yes", False: "NO"}


def _paper_depth(name: str, depth: str) -> tuple[str, str]:
    """The paper's (all faults, content corruption) exact-hop accuracy at this depth."""
    key = ref.paper_diagnoser(name)
    if key is None or not depth.isdigit() or not 1 <= int(depth) <= 3:
        return DASH, DASH
    values = [ref.DIAG_EXACT_HOP[block].get(key) for block in ("all", "content")]
    cells = [num(v[int(depth) - 1], 2) if v else DASH for v in values]
    return cells[0], cells[1]


def sees(d: DiagnoserSummary) -> str:
    """What a diagnoser reads: the trace, the gold answer, a probe, its oracles."""
    text = "trace" + (" + gold" if d.uses_gold else "")
    if d.probing:
        text += " + probe (gold oracle)" if d.uses_gold_oracle else " + probe (gold-free)"
    if d.uses_environment_oracle:
        text += " + clean tool (environment oracle)"
    return text


def fault_mix(diagnosers: Diagnosers) -> str:
    """Which faults each depth pools, from any diagnoser's cells (they diagnose the same
    failed traces)."""
    for d in diagnosers.values():
        by_depth = d.by_depth
        if by_depth:
            return "; ".join(
                f"depth {h}: " + ", ".join(f"{f} {n}" for f, n in
                                           sorted(by_depth[h].faults.items()))
                for h in sorted(by_depth, key=hop_key))
    return ""


def diagnoser_depths(diagnosers: Diagnosers) -> Table:
    """Diagnoser × depth: exact-hop accuracy with its Wilson interval (one interval per
    number: the clustered bootstrap stays in summary.json as a robustness check), the
    independence baseline and whether it beats it, the descriptive flag, chance's analytic
    expectation, and the paper's values."""
    rows = []
    rule = diagnosers["trace-rule"].by_depth if "trace-rule" in diagnosers else {}
    for name, d in diagnosers.items():
        analytic = d.expected_acc_analytic or {}
        for depth in sorted(d.by_depth, key=hop_key):
            c = d.by_depth[depth]
            ruled = rule.get(depth)
            rows.append((name, depth, str(c.n), num(c.acc, 2), ci(c.ci, 2) or DASH,
                         num(c.independence, 2), _BEATS[c.beats_independence],
                         num(None if ruled is None else ruled.acc, 2),
                         _BEATS.get(c.beats_trace_rule, DASH), _abstention(c.abstention),
                         "yes" if c.descriptive_only else "no",
                         num(analytic.get(depth), 2), *_paper_depth(name, depth)))
        overall = d.exact_hop_acc
        rows.append((name, "all", str(d.n), num(overall.mean, 2), ci(overall.ci, 2) or DASH,
                     num(d.independence, 2), DASH, DASH, DASH, _abstention(d.abstention), "",
                     num(analytic.get("overall"), 2), DASH, DASH))
    return Table(caption="Exact-hop accuracy by fault depth (over traces still wrong after "
                         "re-execution)",
                 headers=("diagnoser", "depth", "failed n", "exact-hop acc", "95% CI (Wilson)",
                          "independence", "beats it", "trace-rule",
                          "beats trace-rule", "coverage / precision (random)",
                          "descriptive only", "chance: analytic", "paper: all faults",
                          "paper: content corruption"),
                 rows=tuple(rows),
                 footnote=(f"Each depth pools a different fault mix — {fault_mix(diagnosers)}. "
                           "Independence: Σ_h P(pred = h)·P(true = h), what the diagnoser's own "
                           "blame histogram scores blind to the truth; beats it: the lower "
                           "end of the Wilson interval above that. trace-rule: the control "
                           "that reads only what the agent said of itself (its retries, its "
                           "VERIFY, an early stop); beats trace-rule: the lower end of the "
                           "Wilson interval above its accuracy. Coverage: share of failures on "
                           "which it names a hop; precision: accuracy there; random: a uniform "
                           "hop's precision on the same traces. Paper columns: "
                           f"{ref.DIAG_SETUP} — the paper's setup, not ours. Descriptive "
                           "only: fewer than 10 failed traces at that depth. Two baselines "
                           "for chance: chance: analytic is what a uniform hop of each trace "
                           "scores in expectation (Σ 1/n over its traces); independence is "
                           "what its own blame histogram scores blind to the truth — the "
                           "first is chance's expected accuracy, the second the bar every "
                           "diagnoser must clear."))


def _abstention(cell: Abstention) -> str:
    if cell.coverage is None:
        return DASH
    return (f"{num(cell.coverage, 2)} / {num(cell.precision, 2)} "
            f"({num(cell.random_precision, 2)})")


def diagnoser_fault_depths(diagnosers: Diagnosers) -> Table | None:
    """The headline of the diagnosers: fault × depth cells (never pooled over faults),
    each diagnoser beside the trace-rule control in the same cell."""
    faults = sorted({f for d in diagnosers.values() for f in d.by_fault_depth})
    if not faults:
        return None
    rule = diagnosers["trace-rule"].by_fault_depth if "trace-rule" in diagnosers else {}
    depths = sorted({h for d in diagnosers.values()
                     for cells in d.by_fault_depth.values() for h in cells}, key=hop_key)
    rows = []
    for fault in faults:
        for name, d in diagnosers.items():
            cells = d.by_fault_depth.get(fault) or {}
            if not cells or name == "trace-rule":
                continue
            row = [fault, name]
            for h in depths:
                c = cells.get(h)
                if c is None:
                    row.append(DASH)
                    continue
                ruled = rule.get(fault, {}).get(h)
                rule_acc = None if ruled is None else ruled.acc
                mark = " ▲" if rule_acc is not None and c.ci[0] > rule_acc else ""
                row.append(f"{num(c.acc, 2)}{mark} vs {num(rule_acc, 2)} (n={c.n})"
                           + (DESCRIPTIVE if c.descriptive_only else ""))
            rows.append(tuple(row))
    if not rows:
        return None
    return Table(caption="Exact-hop accuracy per fault and depth: each diagnoser vs the "
                         "trace-rule control on the same failed traces",
                 headers=("fault", "diagnoser", *(f"depth {h}" for h in depths)),
                 rows=tuple(rows),
                 footnote=(f"▲ the lower end of its Wilson interval lies above trace-rule's "
                           f"accuracy. {DESCRIPTIVE} fewer than 10 failed traces: descriptive "
                           "only. A pooled depth mixes faults; these cells do not."))


def diagnoser_faults(diagnosers: Diagnosers) -> Table | None:
    """Diagnoser × fault: exact-hop accuracy pooled over depths (when the summary has it)."""
    faults = sorted({f for d in diagnosers.values() for f in d.by_fault})
    if not faults:
        return None
    rows = []
    for name, d in diagnosers.items():
        cells = [f"{num(cell.acc, 2)} (n={cell.n})" if (cell := d.by_fault.get(f)) is not None
                 else DASH
                 for f in faults]
        rows.append((name, *cells))
    return Table(caption="Exact-hop accuracy by fault, pooled over depths (failed n)",
                 headers=("diagnoser", *faults), rows=tuple(rows))


def _kind(d: DiagnoserSummary) -> str:
    return sees(d) + (f"; {d.stand_in}" if d.stand_in else "")


def diagnoser_metrics(diagnosers: Diagnosers) -> Table:
    """Per diagnoser: what it sees, stage / tolerance / ancestor / MAE and its cost."""
    rows = []
    for name, d in diagnosers.items():
        cost = d.cost_per_correct
        calls = d.calls_per_diagnosis
        none = f"{DASH} (no model calls)"
        uncounted = f"{DASH} (not counted)"  # a backend that reports no token counts
        tokens = d.tokens_per_diagnosis
        spent = ((none,) * 4 if calls == 0 else
                 (num(calls, 2), uncounted if tokens == 0 else num(tokens, 1),
                  num(cost.calls, 2), uncounted if tokens == 0 else num(cost.tokens, 1)))
        rows.append((name + (" (constant)" if d.constant else ""), _kind(d), str(d.n),
                     str(d.errors), mean_ci(d.balanced, 2), mean_ci(d.kappa, 2),
                     f"{num(d.clean_blame_rate, 2)} (n={d.clean_n})",
                     mean_ci(d.stage_acc, 2), mean_ci(d.hop_tol_acc, 2),
                     mean_ci(d.ancestor_hit, 2), mean_ci(d.mae, 2), *spent))
    return Table(caption="Diagnosers: what they see, false blame, other accuracies and cost",
                 headers=("diagnoser", "sees", "n", "errors", "balanced acc", "κ",
                          "clean blame", "stage acc",
                          "hop ±1 acc",
                          "ancestor hit", "mean |hop error|", "calls / diagnosis",
                          "tokens / diagnosis", "calls / correct", "tokens / correct"),
                 rows=tuple(rows),
                 footnote=("Balanced acc: the mean of the per-depth exact-hop accuracies over the "
                           "depths with 5 failures or more; κ: Cohen's κ against the certified "
                           "hop (an abstention a category of its own); a constant scores 1/k "
                           "and 0. (constant): it names one hop on 90 % of the failures or "
                           "more. Clean blame: the share of clean, correct, unfaulted runs "
                           "on which it names a hop (it should name none). Cost per correct "
                           "diagnosis = the diagnoser's calls (tokens) / correct "
                           "localisations; — when none was correct."))


def paper_diagnosers() -> Table:
    """The paper's exact-hop accuracy by depth, both blocks, labelled as its setup."""
    rows = []
    for block, label in (("all", "all faults"), ("content", "content corruption, pooled")):
        n = "/".join(str(x) for x in ref.DIAG_FAILED_N[block])
        for key, values in ref.DIAG_EXACT_HOP[block].items():
            rows.append((ref.DIAG_LABELS[key], label, n, *(f"{v:.2f}" for v in values)))
    return Table(caption=f"Paper reference, NOT our setup — {ref.DIAG_SETUP}",
                 headers=("diagnoser", "faults", "failed n (d1/d2/d3)", "depth 1", "depth 2",
                          "depth 3"),
                 rows=tuple(rows))


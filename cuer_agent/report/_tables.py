"""Tables built from the parts of an evaluate summary: here the headline and the
single-shot CUE-R part (conditions, evidence roles), with what every table module
shares (`ordered`, `DESCRIPTIVE`). The agentic part's tables are in
`_propagation_tables`, the controls' in `_control_tables`, the diagnosers' in
`_diagnoser_tables`. Each function takes one part and returns a `Table` (or None when
that part holds nothing to tabulate)."""

from __future__ import annotations

from collections.abc import Mapping

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, num, pval, share, signed
from cuer_agent.report._render import Table
from cuer_agent.roles import DatasetRoles, Verdict
from cuer_agent.studies.cuer.summary_model import (
    CuerCondition,
    DeltaStat,
    RoleCounts,
)
from cuer_agent.studies.evaluate.headline import NATURAL, Cell, Headline

_VERDICT: dict[object, str] = {True: "yes", False: "no"}

CONDITION_ORDER = ("original", "remove", "replace", "duplicate", "zero_retrieval",
                   "random_target")
ROLE_ORDER = ("constructive", "corrective", "distractive", "confidence-distorting",
              "redundant", "neutral")
DESCRIPTIVE = "†"


def ordered(keys: list[str], first: tuple[str, ...]) -> list[str]:
    return [k for k in first if k in keys] + sorted(k for k in keys if k not in first)


def role_counts(counts: RoleCounts) -> dict[str, int]:
    """Role label (as `cuer_agent.roles` spells it: the model's JSON names) → count."""
    return counts.model_dump(by_alias=True)


def _delta(d: DeltaStat) -> str:
    if d.mean is None:
        return DASH
    return f"{signed(d.mean)} {ci(d.ci, sign=True)} (p {pval(d.p)})"


def _cell(cell: Cell, *, interval: bool = True) -> str:
    if cell.value is None:
        return DASH
    text = f"{cell.value:.2f}"
    if interval and cell.ci is not None:
        text += f" [{cell.ci[0]:.2f}, {cell.ci[1]:.2f}]"
    return text


def headline(head: Headline) -> Table | None:
    """Per fault × depth: recovery beside its retries-off control, and the best gold-free
    diagnoser beside first-hop, trace-rule, chance and the best oracle probe."""
    if not head.rows:
        return None
    labels = {head.best_gold_free: f"best gold-free: {head.best_gold_free}",
              head.best_oracle: f"oracle probe: {head.best_oracle}"}
    labels = {n: label + (" †" if n in head.stand_ins else "") for n, label in labels.items()}
    rows = []
    for row in head.rows:
        failed = next(iter(row.diagnosers.values())).n if row.diagnosers else None
        injected = row.fault != NATURAL
        rows.append((row.fault + (" (forced)" if row.forced else ""), row.depth,
                     str(row.recovery.n or 0) if injected else DASH, _cell(row.recovery),
                     _cell(row.control, interval=False), str(failed or 0),
                     *(_cell(row.diagnosers[name], interval=name == head.best_gold_free)
                       for name in head.columns)))
    return Table(caption="Headline: recovery after a fault at hop h, and exact-hop accuracy of "
                         "the diagnosers on the runs still wrong (95% Wilson intervals)",
                 headers=("fault", "h", "effective n", "recovery", "retries off",
                          "failed n", *(labels.get(n, n) for n in head.columns)),
                 rows=tuple(rows),
                 footnote=("Recovery: share of the effective injections (hop h's first attempt "
                           "changed) that still ended right; retries off: the same injections "
                           "with the agent's retries off (the control); forced: a stop the "
                           "agent did not choose. Best gold-free / oracle probe: the diagnoser "
                           "of that family with the best balanced accuracy (the mean of its "
                           "per-depth accuracies: no constant can win it), chosen once for the "
                           "table over the injected and the natural failures; first-hop, the "
                           "constant, beside it. "
                           "Natural failures: clean runs that ended wrong, at their "
                           "first-error hop from the gold chain (nothing injected, so no "
                           "recovery). trace-rule reads only what the agent said of itself; "
                           "chance names a uniform hop of the trace. † a rule-based stand-in "
                           "(see the caveats)."))


def cuer_main(conditions: Mapping[str, CuerCondition]) -> Table:
    """Per condition: our mean axes next to the paper's HotpotQA / Qwen-3 8B row, then
    the deltas against the original with 95% CIs and p-values."""
    rows = []
    for name in ordered(list(conditions), CONDITION_ORDER):
        cond = conditions[name]
        paper = ref.CUER_HOTPOTQA_QWEN3_8B.get(name, (None, None, None, None))
        cells = [name, str(cond.n)]
        for stat, paper_value in zip((cond.correctness, cond.grounding,
                                      cond.confidence_error, cond.divergence), paper,
                                     strict=True):
            cells += [num(stat.mean), num(paper_value)]
        delta = cond.delta
        cells += ([DASH] * 4 if delta is None else
                  [_delta(d) for d in (delta.correctness, delta.grounding,
                                       delta.confidence_error, delta.divergence)])
        rows.append(tuple(cells))
    return Table(
        caption="Single-shot CUE-R: mean per condition (ours | paper), deltas vs original",
        headers=("condition", "n", "correct.", "paper", "ground.", "paper", "conf. err",
                 "paper", "D", "paper", "Δcorrect. [95% CI] (p)", "Δground. [95% CI] (p)",
                 "Δconf. err [95% CI] (p)", "D vs original [95% CI] (p)"),
        rows=tuple(rows),
        footnote=(f"Paper columns: {ref.CUER_SETUP} — the paper's setup, not ours. "
                  f"{ref.CUER_SIGNIFICANCE} Δ = U(original) − U(counterfactual): Δ > 0 "
                  "means the intervention hurt; confidence error enters as −CE. p: McNemar "
                  "exact (correctness), paired sign-flip permutation (others)."))


def roles_items(primary: RoleCounts, holding: RoleCounts, n_items: int) -> Table:
    """Item-level labels: per role, the targets whose primary label it is and the targets
    for which it holds at all (count and share)."""
    items, holds = role_counts(primary), role_counts(holding)
    total = n_items or sum(items.values())
    rows = tuple((label, share(items[label], total), share(holds[label], total))
                 for label in ROLE_ORDER)
    return Table(caption=f"Evidence roles, item level (n = {total} targets)",
                 headers=("role", "primary label (share)", "holds (share)"), rows=rows,
                 footnote=("Primary: the highest-priority label that holds (corrective > "
                           "constructive > distractive > confidence-distorting > redundant); "
                           "holds: every item it applies to — every corrective item is also "
                           "constructive, which is what the data-set level tests."))


def roles_verdicts(dataset: DatasetRoles) -> Table:
    """Data-set level verdicts: does each role hold, and the CI evidence for it."""
    v = dataset.verdicts
    verdicts: dict[str, Verdict] = {
        "constructive": v.constructive, "corrective": v.corrective,
        "distractive": v.distractive, "confidence-distorting": v.confidence_distorting,
        "redundant": v.redundant}
    rows = [(label, _VERDICT.get(verdict.holds, "not decided"), verdict.reason)
            for label, verdict in verdicts.items()]
    return Table(caption="Evidence roles, data-set level (from the bootstrap CIs of the deltas)",
                 headers=("role", "holds", "why"), rows=tuple(rows))


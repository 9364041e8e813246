"""Per-diagnoser summary of an evaluate run, from `diagnoses.jsonl` alone.

For each diagnoser, over the injected runs that still failed: exact-hop accuracy by depth
(Wilson intervals), per fault × depth, stage accuracy, hop tolerance, cost
(`cuer_agent.metrics.attribution`), plus what a reader needs to tell skill from base
rate:

* `uses_gold`, `uses_gold_oracle`, `uses_environment_oracle`, `probing`, `stand_in` —
  what it reads;
* `abstention` (overall and per depth) — a diagnoser scored as one that may abstain:
  coverage (share of failures where it names a hop), precision there, and a random
  hop's precision on the same traces;
* `by_depth.<d>.beats_trace_rule` — above the `trace-rule` control there (when it ran);
* `clean_blame_rate` — over clean, correct, unfaulted runs, the share on which it names a
  hop (>= 1); it should name none (`clean_n` such runs);
* `blame_hist` — for each hop, the share of its diagnoses on failed runs naming it;
* `by_depth.<d>.independence` — the independence baseline Σ_h P(pred = h)·P(true = h):
  what a diagnoser with the same blame histogram but blind to the truth scores at depth
  d (`independence` overall); `by_depth.<d>.beats_independence` says whether it does
  better there: the lower end of its Wilson interval lies above the baseline;
* `expected_acc_analytic` (chance only) — the uniform picker's expected accuracy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cuer_agent.config import StudyConfig
from cuer_agent.diagnosers import Diagnoser
from cuer_agent.metrics.attribution import (
    Attribution,
    abstention,
    attribution_summary,
    blame_histogram,
    chance_expected_accuracy,
    independence_baseline,
)
from cuer_agent.studies._common.summary_model import Interval, MeanCI
from cuer_agent.studies.diagnose.runner import CLEAN, DiagnosisRow
from cuer_agent.studies.diagnose.summary_model import (
    Abstention,
    CostPerCorrect,
    DepthCell,
    DiagnoserSummary,
    FaultAccuracy,
    FaultDepthCell,
    ProportionCI,
)

Rows = Sequence[DiagnosisRow]

TRACE_RULE = "trace-rule"
"""The control every diagnoser is set beside, per depth, when it ran."""


def attribution(row: DiagnosisRow) -> Attribution:
    return Attribution(example_id=row["example_id"], fault=row["fault"],
                       true_hop=row["true_hop"], true_stage=row["true_stage"],
                       n_hops=row["n_hops"], pred_hop=row["pred_hop"],
                       pred_stage=row["pred_stage"], calls=row["calls"], tokens=row["tokens"])


def clean_blame(rows: Rows) -> tuple[int, float | None]:
    """Over a diagnoser's clean-run rows: how many (`clean_n`), and the share naming a hop
    (>= 1; `clean_blame_rate`)."""
    named = [r["pred_hop"] for r in rows if r["pred_hop"] is not None]
    blamed = sum(1 for h in named if h >= 1)
    return len(rows), round(blamed / len(named), 6) if named else None


def diagnoser_summaries(rows: Rows, diagnosers: list[Diagnoser],
                        config: StudyConfig) -> dict[str, DiagnoserSummary]:
    """Diagnoser name → its summary over `rows` (see the module docstring)."""
    out = {d.name: _summary(d, [r for r in rows if r["diagnoser"] == d.name], config)
           for d in diagnosers}
    return _beside_trace_rule(out)


def _summary(d: Diagnoser, mine: Rows, config: StudyConfig) -> DiagnoserSummary:
    """One diagnoser's summary over its rows (failed runs scored, clean runs blamed)."""
    items = [attribution(r) for r in mine if r["fault"] != CLEAN]
    stats = attribution_summary(items, n_resamples=config.diagnose.bootstrap_resamples,
                                seed=42, min_cell=config.diagnose.min_cell)
    baseline = independence_baseline(items)
    by_depth = {}
    for depth, cell in stats["by_depth"].items():
        independence = baseline["by_depth"][depth]
        by_depth[depth] = DepthCell(
            **cell, independence=independence,
            beats_independence=cell["ci"] is not None and cell["ci"][0] > independence,
            abstention=Abstention(**abstention([it for it in items
                                                if str(it.true_hop) == depth])))
    clean_n, clean_blame_rate = clean_blame([r for r in mine if r["fault"] == CLEAN])
    summary = DiagnoserSummary(
        n=stats["n"], errors=stats["errors"], error_rate=stats["error_rate"],
        by_depth=by_depth, exact_hop_acc=ProportionCI(**stats["exact_hop_acc"]),
        stage_acc=MeanCI(**stats["stage_acc"]), hop_tol_acc=MeanCI(**stats["hop_tol_acc"]),
        ancestor_hit=MeanCI(**stats["ancestor_hit"]), mae=MeanCI(**stats["mae"]),
        calls_per_diagnosis=stats["calls_per_diagnosis"],
        tokens_per_diagnosis=stats["tokens_per_diagnosis"],
        cost_per_correct=CostPerCorrect(**stats["cost_per_correct"]),
        by_fault={fault: FaultAccuracy(**cell) for fault, cell in stats["by_fault"].items()},
        by_fault_depth={fault: {depth: FaultDepthCell(**cell) for depth, cell in cells.items()}
                        for fault, cells in stats["by_fault_depth"].items()},
        uses_gold=d.uses_gold, uses_gold_oracle=getattr(d, "uses_gold_oracle", False),
        uses_environment_oracle=getattr(d, "uses_environment_oracle", False),
        probing=d.probing, stand_in=d.stand_in, control=getattr(d, "control", False),
        blame_hist=blame_histogram(items), independence=baseline["overall"],
        abstention=Abstention(**abstention(items)),
        clean_n=clean_n, clean_blame_rate=clean_blame_rate)
    if d.name != "chance":
        return summary
    # The chance diagnoser draws from 1..max(1, n): a 0-hop trace (early termination at
    # hop 1) gets hop 1. The analytic value uses the same support.
    expected = chance_expected_accuracy(
        [dataclasses.replace(it, n_hops=max(1, it.n_hops)) for it in items])
    return summary.model_copy(update={"expected_acc_analytic": {
        **{h: v["expected_acc"] for h, v in expected["by_depth"].items()},
        "overall": expected["expected_acc"]}})


def _beside_trace_rule(summaries: dict[str, DiagnoserSummary]
                       ) -> dict[str, DiagnoserSummary]:
    """`by_depth.<d>.beats_trace_rule` for every diagnoser, when the `trace-rule` control
    ran: the lower end of its Wilson interval lies above trace-rule's accuracy there."""
    rule = summaries.get(TRACE_RULE)
    if rule is None:
        return summaries
    rule_acc = {depth: cell.acc for depth, cell in rule.by_depth.items()}
    return {name: summary.model_copy(update={"by_depth": {
                depth: cell.model_copy(update={"beats_trace_rule": beats(cell.ci,
                                                                           rule_acc.get(depth))})
                for depth, cell in summary.by_depth.items()}})
            for name, summary in summaries.items()}


def beats(ci: Interval | None, other: float | None) -> bool:
    """The lower end of `ci` lies above `other`."""
    return ci is not None and other is not None and ci[0] > other


def constant_guesses(rows: Rows, share: float = 0.95) -> dict[str, int]:
    """Diagnosers that name one hop for at least `share` of the failed traces: name →
    that hop."""
    by: dict[str, list[int]] = {}
    for r in rows:
        if (hop := r["pred_hop"]) is not None and r["fault"] != CLEAN:
            by.setdefault(r["diagnoser"], []).append(hop)
    out = {}
    for name, hops in by.items():
        top = max(set(hops), key=lambda h: (hops.count(h), -h))
        if hops.count(top) >= share * len(hops):
            out[name] = top
    return out

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
from cuer_agent.metrics.agreement import agreement
from cuer_agent.metrics.attribution import (
    Attribution,
    Resampling,
    blame_histogram,
    chance_expected_accuracy,
    clustered_interval,
    group,
    hop_errors,
    independence_baseline,
    indicator,
    mean,
    mean_interval,
    per,
    wilson,
)
from cuer_agent.studies._common.summary_model import Interval, MeanCI, extended
from cuer_agent.studies.diagnose.runner import CLEAN, DiagnosisRow
from cuer_agent.studies.diagnose.summary_model import (
    Abstention,
    AttributionScores,
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
                       pred_stage=row["pred_stage"], calls=row["calls"], tokens=row["tokens"],
                       wrong_hops=(tuple(wrong) if (wrong := row.get("wrong_hops")) is not None
                                   else None))


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


def attribution_scores(items: Sequence[Attribution], *, n_resamples: int, seed: int,
                       min_cell: int) -> AttributionScores:
    """Exact-hop accuracy by depth and overall, per fault and per fault × depth, stage /
    tolerance / ancestor accuracy, MAE and cost, each as `cuer_agent.metrics.attribution`
    defines it; each depth beside its independence baseline and scored for abstention."""
    items = list(items)
    n = len(items)
    errors = sum(it.errored for it in items)
    resampling: Resampling = {"n_resamples": n_resamples, "seed": seed}
    exact = indicator(items, "hop_correct")
    errs = hop_errors(items)
    calls = sum(it.calls for it in items)
    tokens = sum(it.tokens for it in items)
    correct = int(exact.sum())
    baseline = independence_baseline(items)["by_depth"]
    agreed = agreement(items, **resampling)
    return AttributionScores(
        n=n, errors=errors, error_rate=per(errors, n),
        by_depth={str(hop): _depth_cell(cell, baseline[str(hop)], resampling, min_cell)
                  for hop, cell in group(items, "true_hop").items()},
        exact_hop_acc=ProportionCI(mean=mean(exact), ci=wilson(exact),
                                   ci_clustered=clustered_interval(exact, items, **resampling)),
        balanced=MeanCI(mean=agreed.balanced, ci=agreed.balanced_ci),
        kappa=MeanCI(mean=agreed.kappa, ci=agreed.kappa_ci),
        balanced_depths=list(agreed.depths), constant=agreed.constant,
        **_wrong_hop_acc(items, resampling),
        stage_acc=_proportion(items, "stage_correct"),
        hop_tol_acc=_proportion(items, "hop_within_one"),
        ancestor_hit=_proportion(items, "ancestor_hit"),
        mae=MeanCI(mean=mean(errs), ci=mean_interval(errs, **resampling)),
        calls_per_diagnosis=per(calls, n), tokens_per_diagnosis=per(tokens, n),
        cost_per_correct=CostPerCorrect(calls=per(calls, correct), tokens=per(tokens, correct)),
        by_fault={fault: FaultAccuracy(n=len(cell), acc=mean(indicator(cell, "hop_correct")))
                  for fault, cell in group(items, "fault").items()},
        by_fault_depth={fault: {str(hop): _fault_depth_cell(depth_cell, min_cell)
                                for hop, depth_cell in group(cell, "true_hop").items()}
                        for fault, cell in group(items, "fault").items()})


def _wrong_hop_acc(items: Sequence[Attribution],
                   resampling: Resampling) -> dict[str, ProportionCI]:
    """`wrong_hop_acc`, "names a wrong hop" (`Attribution.names_wrong_hop`), when every
    item's label gives its wrong hops; no key otherwise."""
    if not items or any(it.wrong_hops is None for it in items):
        return {}
    hits = indicator(items, "names_wrong_hop")
    return {"wrong_hop_acc": ProportionCI(
        mean=mean(hits), ci=wilson(hits),
        ci_clustered=clustered_interval(hits, items, **resampling))}


def abstention(items: Sequence[Attribution]) -> Abstention:
    """A diagnoser that may abstain (hop 0, the answer level, names no hop), scored as
    one: `coverage` = share of the items where it names a hop (>= 1); `precision` =
    exact-hop accuracy on those (Wilson `precision_ci`); `random_precision` = what a
    uniform hop in 1..n_hops scores on the same items — the precision of a random
    diagnoser at any coverage, its accuracy `coverage · random_precision`. Errors count
    as abstentions."""
    named = [it for it in items if it.pred_hop is not None and it.pred_hop >= 1]
    hits = indicator(named, "hop_correct")
    return Abstention(coverage=per(len(named), len(items)), named=len(named),
                      precision=mean(hits), precision_ci=wilson(hits),
                      random_precision=mean(indicator(items, "chance_hit_probability")))


def _proportion(items: Sequence[Attribution], outcome: str) -> MeanCI:
    """The share of `items` with `outcome`, with its Wilson interval."""
    hits = indicator(items, outcome)
    return MeanCI(mean=mean(hits), ci=wilson(hits))


def _depth_cell(cell: Sequence[Attribution], independence: float, resampling: Resampling,
                min_cell: int) -> DepthCell:
    """The failed traces at one injected depth: exact-hop accuracy, beside the
    independence baseline there (`independence`), and scored for abstention."""
    hits = indicator(cell, "hop_correct")
    ci = wilson(hits)
    return DepthCell(n=len(cell), acc=mean(hits), ci=ci,
                     ci_clustered=clustered_interval(hits, cell, **resampling),
                     descriptive_only=len(cell) < min_cell,
                     faults={f: len(c) for f, c in group(cell, "fault").items()},
                     independence=independence,
                     beats_independence=ci is not None and ci[0] > independence,
                     abstention=abstention(cell))


def _fault_depth_cell(cell: Sequence[Attribution], min_cell: int) -> FaultDepthCell:
    """Exact-hop accuracy over one fault × depth cell, with its Wilson interval."""
    hits = indicator(cell, "hop_correct")
    return FaultDepthCell(acc=mean(hits), n=len(cell), ci=wilson(hits),
                          descriptive_only=len(cell) < min_cell)


def _summary(d: Diagnoser, mine: Rows, config: StudyConfig) -> DiagnoserSummary:
    """One diagnoser's summary over its rows (failed runs scored, clean runs blamed)."""
    items = [attribution(r) for r in mine if r["fault"] != CLEAN]
    scores = attribution_scores(items, n_resamples=config.diagnose.bootstrap_resamples,
                                seed=42, min_cell=config.diagnose.min_cell)
    clean_n, clean_blame_rate = clean_blame([r for r in mine if r["fault"] == CLEAN])
    summary = extended(
        scores, DiagnoserSummary,
        uses_gold=d.uses_gold, uses_gold_oracle=getattr(d, "uses_gold_oracle", False),
        uses_environment_oracle=getattr(d, "uses_environment_oracle", False),
        probing=d.probing, stand_in=d.stand_in, control=getattr(d, "control", False),
        blame_hist=blame_histogram(items), independence=independence_baseline(items)["overall"],
        abstention=abstention(items),
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

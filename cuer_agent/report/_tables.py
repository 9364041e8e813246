"""Tables built from the parts of an evaluate summary. Each function takes one part and
returns a `Table` (or None when that part holds nothing to tabulate)."""

from __future__ import annotations

from collections.abc import Mapping

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, mean_ci, num, pval, share, signed
from cuer_agent.report._render import Table
from cuer_agent.studies._common.cells import hop_key
from cuer_agent.studies.cuer.cells import (
    CuerCondition,
    DatasetRoles,
    DeltaStat,
    RoleCounts,
    Verdict,
)
from cuer_agent.studies.diagnose.cells import Abstention, DiagnoserSummary
from cuer_agent.studies.evaluate.cells import ReaderCheck
from cuer_agent.studies.evaluate.headline import NATURAL, Cell, Headline
from cuer_agent.studies.propagation.cells import (
    FaultCell,
    HopOperatorCell,
    Invisibility,
    TamperingCell,
    VerifyRates,
)

Faults = Mapping[str, Mapping[str, FaultCell]]
"""Fault → injected hop → its cell (`PropagationResults.faults`)."""
Diagnosers = Mapping[str, DiagnoserSummary]
"""Diagnoser name → its summary (`EvaluateSummary.diagnosers`)."""

_VERDICT: dict[object, str] = {True: "yes", False: "no"}
_BEATS: dict[object, str] = {True: "yes", False: "NO"}

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
    diagnoser beside trace-rule, chance and the best oracle probe."""
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
                           "of that family with the best pooled exact-hop accuracy, chosen once "
                           "for the table over the injected and the natural failures. "
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


def _hops(faults: Faults) -> list[str]:
    """Every injected hop of any fault, in hop order."""
    return sorted({h for per_hop in faults.values() for h in per_hop}, key=hop_key)


def recovery_effective(faults: Faults) -> Table | None:
    """The headline: fault × hop, recovery over effective injections with retries on |
    off (the control, same injections)."""
    if not faults:
        return None
    hops = _hops(faults)
    rows = tuple((fault, *(_effective_cell(per_hop.get(h)) for h in hops))
                 for fault, per_hop in faults.items())
    return Table(caption="Recovery over effective injections: the agent [95% Wilson CI] | "
                         "the same injections with its retries off (the control); n = "
                         "effective injections, VERIFY = how many of them it flagged",
                 headers=("fault", *(f"hop {h}" for h in hops)), rows=rows,
                 footnote=(f"{DESCRIPTIVE} fewer than 10 effective injections: descriptive "
                           "only. Effective: hop h's first attempt found or selected "
                           "something else than in the clean run. The gap between the two "
                           "figures is what the retry did; where they agree, recovery would "
                           "be the same without it."))


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


def verify_rates(verify: VerifyRates) -> Table:
    """VERIFY's false alarms on clean hops and its detection per fault."""
    alarm = verify.false_alarm
    rows = [("clean hops (false alarm)", str(alarm.n),
             f"{num(alarm.rate, 3)} {ci(alarm.ci, 3)}".rstrip())]
    for fault, cell in verify.detection.items():
        rows.append((f"{fault} (detection)", str(cell.n),
                     f"{num(cell.rate, 3)} {ci(cell.ci, 3)}".rstrip()))
    return Table(caption="VERIFY: how often it flags a hop's first attempt (unsupported, or "
                         "nothing selected)",
                 headers=("hops", "n", "flagged [95% Wilson CI]"), rows=tuple(rows),
                 footnote="Detection: over the effective injections' faulted first attempts. "
                          "False alarm: over every hop of the clean runs.")


def invisibility(part: Invisibility) -> Table | None:
    """Per fault: can classifiers tell its injected items from real ones?"""
    if not part.faults:
        return None
    rows = []
    for name, c in part.faults.items():
        view = c.in_view
        top = c.top_feature or DASH
        top_auc = c.feature_auc.get(top)
        rows.append((name, str(c.injected), f"{num(c.auc, 2)} {ci(c.ci, 2)}".rstrip(),
                     num(c.auc_independent, 2), num(c.auc_words, 2),
                     f"{top} ({num(top_auc, 2)})" if top_auc is not None else top,
                     "DETECTABLE" if c.detectable else "no",
                     f"{num(view.auc, 2)} / {num(view.auc_content, 2)}"))
    positional = ", ".join(part.positional)
    return Table(caption="Invisibility: ROC AUC of classifiers telling injected items from "
                         "the real items they stand in for (0.5 = invisible)",
                 headers=("fault", "injected", "AUC [95% CI]", "trees", "words only",
                          "best single feature", f"> {num(part.threshold, 2)}",
                          "in view: all / without position"),
                 rows=tuple(rows),
                 footnote=("Stands in for: an edited passage's original; a passage added to "
                           "the corpus → the real paragraphs of its title in the same view; a "
                           "real passage that entered the view because another left → the "
                           "clean run's item at its rank. In view: every real item of the "
                           f"faulted view, position ({positional}) included, then without it. "
                           "Out-of-fold scores, folds grouped by example."))


def reader(part: ReaderCheck) -> Table:
    """The reader's clean accuracy with and without its relation table."""
    rows = [("as run", str(part.n), f"{num(part.accuracy, 3)} {ci(part.ci, 3)}".rstrip())]
    plain = part.without_relation_table
    if plain is not None:
        rows.append(("relation table off", str(part.n),
                     f"{num(plain.accuracy, 3)} {ci(plain.ci, 3)}".rstrip()))
    return Table(caption=f"The reader ({part.backend}, {part.model}, version "
                         f"{part.version or DASH}): clean accuracy of the agent",
                 headers=("reader", "clean runs", "accuracy [95% Wilson CI]"),
                 rows=tuple(rows),
                 footnote=(f"Its word table: {part.relation_groups} relation groups, "
                           f"{part.relation_words} words "
                           "(cuer_agent.llm._reading.RELATION_GROUPS)."
                           if part.relation_groups else "A language model: no word "
                                                               "table to switch off."))


def recovery(faults: Faults) -> Table | None:
    """Fault × hop: recovered / injected, recovery(h) with its 95% CI."""
    if not faults:
        return None
    hops = _hops(faults)
    rows = tuple((fault, *(_recovery_cell(per_hop.get(h)) for h in hops))
                 for fault, per_hop in faults.items())
    return Table(caption="Recovery after a fault at hop h (recovered/injected = recovery [95% "
                         "Wilson CI]; runs that retried hop h; effective injections → "
                         "recovered of them; runs that ended in a request error or a parse "
                         "failure, counted apart)",
                 headers=("fault", *(f"hop {h}" for h in hops)), rows=rows,
                 footnote=(f"{DESCRIPTIVE} fewer than 10 injections: descriptive only. "
                           f"Reference — {ref.DIAG_SETUP}; {ref.RECOVERY_RANGES} (their "
                           "setup, not ours)."))


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
        rows.append((name, _kind(d), str(d.n), str(d.errors),
                     f"{num(d.clean_blame_rate, 2)} (n={d.clean_n})",
                     mean_ci(d.stage_acc, 2), mean_ci(d.hop_tol_acc, 2),
                     mean_ci(d.ancestor_hit, 2), mean_ci(d.mae, 2), *spent))
    return Table(caption="Diagnosers: what they see, false blame, other accuracies and cost",
                 headers=("diagnoser", "sees", "n", "errors", "clean blame", "stage acc",
                          "hop ±1 acc",
                          "ancestor hit", "mean |hop error|", "calls / diagnosis",
                          "tokens / diagnosis", "calls / correct", "tokens / correct"),
                 rows=tuple(rows),
                 footnote=("Clean blame: the share of clean, correct, unfaulted runs on which "
                           "it names a hop (it should name none). Cost per correct diagnosis = "
                           "the diagnoser's calls (tokens) / correct localisations; — when none "
                           "was correct."))


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

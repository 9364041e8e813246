"""Tables built from the parts of an evaluate summary. Each function takes one part and
returns a `Table` (or None when that part holds nothing to tabulate)."""

from __future__ import annotations

from typing import Any

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, mean_ci, num, pval, share, signed
from cuer_agent.report._render import Table
from cuer_agent.studies._common.cells import hop_key
from cuer_agent.studies.evaluate.headline import Cell, Headline

_VERDICT: dict[object, str] = {True: "yes", False: "no"}
_BEATS: dict[object, str] = {True: "yes", False: "NO"}

CONDITION_ORDER = ("original", "remove", "replace", "duplicate", "zero_retrieval",
                   "random_target")
ROLE_ORDER = ("constructive", "corrective", "distractive", "confidence-distorting",
              "redundant", "neutral")
DESCRIPTIVE = "†"


def _ordered(keys: list[str], first: tuple[str, ...]) -> list[str]:
    return [k for k in first if k in keys] + sorted(k for k in keys if k not in first)


def _delta(delta: dict[str, Any], axis: str) -> str:
    d = delta.get(axis)
    if not isinstance(d, dict) or d.get("mean") is None:
        return DASH
    return f"{signed(d['mean'])} {ci(d.get('ci'), sign=True)} (p {pval(d.get('p'))})"


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
        rows.append((row.fault + (" (forced)" if row.forced else ""), row.depth,
                     str(row.recovery.n or 0), _cell(row.recovery),
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
                           "for the table. trace-rule reads only what the agent said of itself; "
                           "chance names a uniform hop of the trace. † a rule-based stand-in "
                           "(see the caveats)."))


def cuer_main(conditions: dict[str, Any]) -> Table:
    """Per condition: our mean axes next to the paper's HotpotQA / Qwen-3 8B row, then
    the deltas against the original with 95% CIs and p-values."""
    rows = []
    for name in _ordered(list(conditions), CONDITION_ORDER):
        cond = conditions[name] or {}
        paper = ref.CUER_HOTPOTQA_QWEN3_8B.get(name, (None, None, None, None))
        cells = [name, str(cond.get("n", DASH))]
        for axis, paper_value in zip(("correctness", "grounding", "confidence_error",
                                      "divergence"), paper, strict=True):
            cells += [num((cond.get(axis) or {}).get("mean")), num(paper_value)]
        delta = cond.get("delta") or {}
        cells += [_delta(delta, a) for a in ("correctness", "grounding", "confidence_error",
                                             "divergence")]
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


def roles_items(items: dict[str, int], holding: dict[str, int], n_items: Any) -> Table | None:
    """Item-level labels: per role, the targets whose primary label it is and the targets
    for which it holds at all (count and share)."""
    if not items:
        return None
    total = n_items if isinstance(n_items, int) and n_items else sum(
        v for v in items.values() if isinstance(v, int))
    rows = tuple((label, share(items[label], total), share(holding.get(label), total))
                 for label in _ordered(list(items), ROLE_ORDER))
    return Table(caption=f"Evidence roles, item level (n = {total} targets)",
                 headers=("role", "primary label (share)", "holds (share)"), rows=rows,
                 footnote=("Primary: the highest-priority label that holds (corrective > "
                           "constructive > distractive > confidence-distorting > redundant); "
                           "holds: every item it applies to — every corrective item is also "
                           "constructive, which is what the data-set level tests."))


def roles_verdicts(dataset: dict[str, Any]) -> Table | None:
    """Data-set level verdicts: does each role hold, and the CI evidence for it."""
    verdicts = dataset.get("verdicts") or {}
    if not verdicts:
        return None
    rows = []
    for label in _ordered(list(verdicts), ROLE_ORDER):
        v = verdicts[label] or {}
        holds = _VERDICT.get(v.get("holds"), "not decided")
        rows.append((label, holds, str(v.get("reason", ""))))
    return Table(caption="Evidence roles, data-set level (from the bootstrap CIs of the deltas)",
                 headers=("role", "holds", "why"), rows=tuple(rows))


def _recovery_cell(cell: Any) -> str:
    if not isinstance(cell, dict) or not cell.get("injected"):
        return DASH
    label = "correct after a forced stop " if cell.get("forced") else ""
    text = (f"{label}{cell.get('recovered', 0)}/{cell['injected']} = "
            f"{num(cell.get('recovery'), 2)} {ci(cell.get('ci'), 2)}").rstrip()
    text += DESCRIPTIVE if cell.get("descriptive_only") else ""
    if "effective" in cell:
        text += (f"; retried {cell.get('retried', 0)}, effective {cell['effective']}"
                 f" → {cell.get('recovered_effective', 0)}/{cell['effective']}")
    hit = cell.get("first_hit") or {}
    if hit.get("later") or hit.get("never"):
        text += f"; first reached the agent later in {hit.get('later', 0)}, never in " \
                f"{hit.get('never', 0)}"
    if cell.get("errors"):
        text += f"; {cell['errors']} ended in an error or a parse failure (apart)"
    return text


def _effective_cell(cell: Any) -> str:
    """Recovery over the effective injections, then the retries-off control."""
    if not isinstance(cell, dict) or not cell.get("effective"):
        return DASH
    if cell.get("forced"):
        return (f"forced stop: {cell.get('recovered', 0)}/{cell['injected']} right "
                f"{ci(cell.get('ci'), 2)}").rstrip()
    text = (f"{num(cell.get('recovery_effective'), 2)} "
            f"{ci(cell.get('recovery_effective_ci'), 2)}").rstrip()
    control = cell.get("control")
    text += (f" | {num(control.get('recovery'), 2)} {ci(control.get('ci'), 2)}".rstrip()
             if isinstance(control, dict) else " | —")
    text += f" (n={cell['effective']}, VERIFY {cell.get('verify_detected', 0)})"
    return text + (DESCRIPTIVE if cell["effective"] < 10 else "")


def recovery_effective(faults: dict[str, Any]) -> Table | None:
    """The headline: fault × hop, recovery over effective injections with retries on |
    off (the control, same injections)."""
    if not faults:
        return None
    hops = sorted({h for per_hop in faults.values() for h in (per_hop or {})}, key=hop_key)
    rows = tuple((fault, *(_effective_cell((faults[fault] or {}).get(h)) for h in hops))
                 for fault in faults)
    return Table(caption="Recovery over effective injections: the agent [95% Wilson CI] | "
                         "the same injections with its retries off (the control); n = "
                         "effective injections, VERIFY = how many of them it flagged",
                 headers=("fault", *(f"hop {h}" for h in hops)), rows=rows,
                 footnote=(f"{DESCRIPTIVE} fewer than 10 effective injections: descriptive "
                           "only. Effective: hop h's first attempt found or selected "
                           "something else than in the clean run. The gap between the two "
                           "figures is what the retry did; where they agree, recovery would "
                           "be the same without it."))


def redundancy(faults: dict[str, Any]) -> Table | None:
    """Fault × redundancy of the faulted fact: recovery of effective injections."""
    rows = []
    for fault, per_hop in faults.items():
        pooled: dict[str, list[int]] = {}
        for cell in (per_hop or {}).values():
            for r, c in ((cell or {}).get("by_redundancy") or {}).items():
                acc = pooled.setdefault(r, [0, 0])
                acc[0] += c.get("recovered", 0)
                acc[1] += c.get("n", 0)
        if pooled:
            rows.append((fault, *(f"{pooled[r][0]}/{pooled[r][1]}" if r in pooled else DASH
                                  for r in ("1", "2", "3"))))
    if not rows:
        return None
    return Table(caption="Recovery of effective injections by the faulted fact's redundancy "
                         "(in how many passages the world states it), pooled over hops",
                 headers=("fault", "stated in 1", "stated in 2", "stated in 3"),
                 rows=tuple(rows))


def verify_rates(verify: dict[str, Any]) -> Table | None:
    """VERIFY's false alarms on clean hops and its detection per fault."""
    if not verify:
        return None
    alarm = verify.get("false_alarm") or {}
    rows = [("clean hops (false alarm)", str(alarm.get("n", 0)),
             f"{num(alarm.get('rate'), 3)} {ci(alarm.get('ci'), 3)}".rstrip())]
    for fault, cell in (verify.get("detection") or {}).items():
        rows.append((f"{fault} (detection)", str(cell.get("n", 0)),
                     f"{num(cell.get('rate'), 3)} {ci(cell.get('ci'), 3)}".rstrip()))
    return Table(caption="VERIFY: how often it flags a hop's first attempt (unsupported, or "
                         "nothing selected)",
                 headers=("hops", "n", "flagged [95% Wilson CI]"), rows=tuple(rows),
                 footnote="Detection: over the effective injections' faulted first attempts. "
                          "False alarm: over every hop of the clean runs.")


def invisibility(part: dict[str, Any]) -> Table | None:
    """Per fault: can classifiers tell its injected items from real ones?"""
    faults = part.get("faults") or {}
    if not faults:
        return None
    rows = []
    for name, c in faults.items():
        view = c.get("in_view") or {}
        top = c.get("top_feature") or DASH
        top_auc = (c.get("feature_auc") or {}).get(top)
        rows.append((name, str(c.get("injected", 0)),
                     f"{num(c.get('auc'), 2)} {ci(c.get('ci'), 2)}".rstrip(),
                     num(c.get("auc_independent"), 2), num(c.get("auc_words"), 2),
                     f"{top} ({num(top_auc, 2)})" if top_auc is not None else top,
                     "DETECTABLE" if c.get("detectable") else "no",
                     f"{num(view.get('auc'), 2)} / {num(view.get('auc_content'), 2)}"))
    positional = ", ".join(part.get("positional") or [])
    return Table(caption="Invisibility: ROC AUC of classifiers telling injected items from "
                         "the real items they stand in for (0.5 = invisible)",
                 headers=("fault", "injected", "AUC [95% CI]", "trees", "words only",
                          "best single feature", f"> {num(part.get('threshold'), 2)}",
                          "in view: all / without position"),
                 rows=tuple(rows),
                 footnote=("Stands in for: an edited passage's original; a passage added to "
                           "the corpus → the real paragraphs of its title in the same view; a "
                           "real passage that entered the view because another left → the "
                           "clean run's item at its rank. In view: every real item of the "
                           f"faulted view, position ({positional}) included, then without it. "
                           "Out-of-fold scores, folds grouped by example."))


def reader(part: dict[str, Any]) -> Table | None:
    """The reader's clean accuracy with and without its relation table."""
    if not part:
        return None
    rows = [("as run", str(part.get("n", 0)),
             f"{num(part.get('accuracy'), 3)} {ci(part.get('ci'), 3)}".rstrip())]
    plain = part.get("without_relation_table")
    if isinstance(plain, dict):
        rows.append(("relation table off", str(part.get("n", 0)),
                     f"{num(plain.get('accuracy'), 3)} {ci(plain.get('ci'), 3)}".rstrip()))
    return Table(caption=f"The reader ({part.get('backend')}, {part.get('model')}, version "
                         f"{part.get('version') or DASH}): clean accuracy of the agent",
                 headers=("reader", "clean runs", "accuracy [95% Wilson CI]"),
                 rows=tuple(rows),
                 footnote=(f"Its word table: {part.get('relation_groups', 0)} relation groups, "
                           f"{part.get('relation_words', 0)} words "
                           "(cuer_agent.llm._reading.RELATION_GROUPS)."
                           if part.get("relation_groups") else "A language model: no word "
                                                               "table to switch off."))


def recovery(faults: dict[str, Any]) -> Table | None:
    """Fault × hop: recovered / injected, recovery(h) with its 95% CI."""
    if not faults:
        return None
    hops = sorted({h for per_hop in faults.values() for h in (per_hop or {})}, key=hop_key)
    rows = tuple((fault, *(_recovery_cell((faults[fault] or {}).get(h)) for h in hops))
                 for fault in faults)
    return Table(caption="Recovery after a fault at hop h (recovered/injected = recovery [95% "
                         "Wilson CI]; runs that retried hop h; effective injections → "
                         "recovered of them; runs that ended in a request error or a parse "
                         "failure, counted apart)",
                 headers=("fault", *(f"hop {h}" for h in hops)), rows=rows,
                 footnote=(f"{DESCRIPTIVE} fewer than 10 injections: descriptive only. "
                           f"Reference — {ref.DIAG_SETUP}; {ref.RECOVERY_RANGES} (their "
                           "setup, not ours)."))


def tampering(tamper: dict[str, Any]) -> Table | None:
    """Per hop: resisted / absorbed / derailed (shares of injected), query contamination,
    the certificate strategies, and the paper's shares at that depth."""
    by_hop = tamper or {}
    if not by_hop:
        return None
    rows = []
    for h in sorted(by_hop, key=hop_key):
        c = by_hop[h] or {}
        n = c.get("injected", 0)
        strategies = ", ".join(f"{k} {v}" for k, v in sorted((c.get("strategies") or {}).items()))
        paper = ref.TAMPERING_BY_DEPTH.get(str(h))
        paper_text = (f"{paper[0]:.2f} / {paper[1]:.2f} / {paper[2]:.2f} (n={paper[3]})"
                      if paper else DASH)
        rows.append((str(h), str(n), share(c.get("resisted"), n), share(c.get("absorbed"), n),
                     share(c.get("derailed"), n), share(c.get("contaminated"), n),
                     strategies or DASH, paper_text))
    return Table(caption="Certified content tampering by hop: outcome counts (share of injected)",
                 headers=("hop", "injected", "resisted", "absorbed", "derailed",
                          "query contaminated", "strategies",
                          "paper resisted / absorbed / derailed"),
                 rows=tuple(rows),
                 footnote=f"Paper column: {ref.DIAG_SETUP} — their setup, not ours.")


def hop_operators(ops: dict[str, Any]) -> Table | None:
    """Per-hop CUE-R operators in the agent: deltas and the multi-hop / plain D."""
    rows = []
    for op, by_hop in ops.items():
        for h in sorted(by_hop or {}, key=hop_key):
            c = by_hop[h] or {}
            rows.append((op, str(h), str(c.get("n", DASH)),
                         mean_ci(c.get("delta_correctness"), sign=True),
                         mean_ci(c.get("delta_grounding"), sign=True),
                         mean_ci(c.get("delta_confidence_error"), sign=True),
                         mean_ci(c.get("divergence")), num(c.get("divergence_cuer"))))
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


def sees(d: dict[str, Any]) -> str:
    """What a diagnoser reads: the trace, the gold answer, a probe, its oracles."""
    text = "trace" + (" + gold" if d.get("uses_gold") else "")
    if d.get("probing"):
        text += " + probe (gold oracle)" if d.get("uses_gold_oracle") else " + probe (gold-free)"
    if d.get("uses_environment_oracle"):
        text += " + clean tool (environment oracle)"
    return text


def fault_mix(diagnosers: dict[str, Any]) -> str:
    """Which faults each depth pools, from any diagnoser's cells (they diagnose the same
    failed traces)."""
    for d in diagnosers.values():
        by_depth = (d or {}).get("by_depth") or {}
        if by_depth:
            return "; ".join(
                f"depth {h}: " + ", ".join(f"{f} {n}" for f, n in
                                           sorted((by_depth[h].get("faults") or {}).items()))
                for h in sorted(by_depth, key=hop_key))
    return ""


def diagnoser_depths(diagnosers: dict[str, Any]) -> Table:
    """Diagnoser × depth: exact-hop accuracy with its Wilson interval (one interval per
    number: the clustered bootstrap stays in summary.json as a robustness check), the
    independence baseline and whether it beats it, the descriptive flag, chance's analytic
    expectation, and the paper's values."""
    rows = []
    rule = (diagnosers.get("trace-rule") or {}).get("by_depth") or {}
    for name, d in diagnosers.items():
        d = d or {}
        analytic = d.get("expected_acc_analytic") or {}
        for depth in sorted(d.get("by_depth") or {}, key=hop_key):
            c = d["by_depth"][depth] or {}
            beats = _BEATS.get(c.get("beats_independence"), DASH)
            rows.append((name, str(depth), str(c.get("n", DASH)), num(c.get("acc"), 2),
                         ci(c.get("ci"), 2) or DASH, num(c.get("independence"), 2), beats,
                         num((rule.get(depth) or {}).get("acc"), 2),
                         _BEATS.get(c.get("beats_trace_rule"), DASH),
                         _abstention(c.get("abstention")),
                         "yes" if c.get("descriptive_only") else "no",
                         num(analytic.get(str(depth)), 2), *_paper_depth(name, str(depth))))
        overall = d.get("exact_hop_acc") or {}
        rows.append((name, "all", str(d.get("n", DASH)), num(overall.get("mean"), 2),
                     ci(overall.get("ci"), 2) or DASH, num(d.get("independence"), 2), DASH,
                     DASH, DASH,
                     _abstention(d.get("abstention")), "",
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


def _abstention(cell: Any) -> str:
    if not isinstance(cell, dict) or cell.get("coverage") is None:
        return DASH
    return (f"{num(cell['coverage'], 2)} / {num(cell.get('precision'), 2)} "
            f"({num(cell.get('random_precision'), 2)})")


def diagnoser_fault_depths(diagnosers: dict[str, Any]) -> Table | None:
    """The headline of the diagnosers: fault × depth cells (never pooled over faults),
    each diagnoser beside the trace-rule control in the same cell."""
    faults = sorted({f for d in diagnosers.values()
                     for f in ((d or {}).get("by_fault_depth") or {})})
    if not faults:
        return None
    rule = (diagnosers.get("trace-rule") or {}).get("by_fault_depth") or {}
    depths = sorted({h for d in diagnosers.values()
                     for cells in ((d or {}).get("by_fault_depth") or {}).values()
                     for h in cells}, key=hop_key)
    rows = []
    for fault in faults:
        for name, d in diagnosers.items():
            cells = ((d or {}).get("by_fault_depth") or {}).get(fault) or {}
            if not cells or name == "trace-rule":
                continue
            row = [fault, name]
            for h in depths:
                c, r = cells.get(h) or {}, (rule.get(fault) or {}).get(h) or {}
                if not c:
                    row.append(DASH)
                    continue
                mark = (" ▲" if c.get("ci") and r.get("acc") is not None
                        and c["ci"][0] > r["acc"] else "")
                row.append(f"{num(c.get('acc'), 2)}{mark} vs {num(r.get('acc'), 2)} "
                           f"(n={c.get('n', 0)})"
                           + (DESCRIPTIVE if c.get("descriptive_only") else ""))
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


def diagnoser_faults(diagnosers: dict[str, Any]) -> Table | None:
    """Diagnoser × fault: exact-hop accuracy pooled over depths (when the summary has it)."""
    faults = sorted({f for d in diagnosers.values() for f in (d or {}).get("by_fault") or {}})
    if not faults:
        return None
    rows = []
    for name, d in diagnosers.items():
        by_fault = (d or {}).get("by_fault") or {}
        cells = [f"{num((by_fault.get(f) or {}).get('acc'), 2)} "
                 f"(n={(by_fault.get(f) or {}).get('n', 0)})" if f in by_fault else DASH
                 for f in faults]
        rows.append((name, *cells))
    return Table(caption="Exact-hop accuracy by fault, pooled over depths (failed n)",
                 headers=("diagnoser", *faults), rows=tuple(rows))


def _kind(d: dict[str, Any]) -> str:
    return sees(d) + (f"; {d['stand_in']}" if d.get("stand_in") else "")


def diagnoser_metrics(diagnosers: dict[str, Any]) -> Table:
    """Per diagnoser: what it sees, stage / tolerance / ancestor / MAE and its cost."""
    rows = []
    for name, d in diagnosers.items():
        d = d or {}
        cost = d.get("cost_per_correct") or {}
        calls = d.get("calls_per_diagnosis")
        none = f"{DASH} (no model calls)"
        uncounted = f"{DASH} (not counted)"  # a backend that reports no token counts
        tokens = d.get("tokens_per_diagnosis")
        spent = ((none,) * 4 if calls == 0 else
                 (num(calls, 2), uncounted if tokens == 0 else num(tokens, 1),
                  num(cost.get("calls"), 2),
                  uncounted if tokens == 0 else num(cost.get("tokens"), 1)))
        rows.append((name, _kind(d), str(d.get("n", DASH)), str(d.get("errors", DASH)),
                     f"{num(d.get('clean_blame_rate'), 2)} (n={d.get('clean_n', 0)})",
                     mean_ci(d.get("stage_acc"), 2), mean_ci(d.get("hop_tol_acc"), 2),
                     mean_ci(d.get("ancestor_hit"), 2), mean_ci(d.get("mae"), 2), *spent))
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


def ledger(led: dict[str, Any]) -> Table | None:
    """The backend ledger of the evaluate run."""
    if not led:
        return None
    keys = _ordered(list(led), ("requests", "calls", "cache_hits", "parse_failures",
                                "parse_failure_rate", "tokens"))
    rows = tuple((k, num(led[k], 4) if isinstance(led[k], float) else str(led[k]))
                 for k in keys if not isinstance(led[k], dict | list))
    return Table(caption="Backend ledger (whole evaluate run)", headers=("counter", "value"),
                 rows=rows)

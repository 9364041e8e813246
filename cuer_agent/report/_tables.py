"""Tables built from the parts of an evaluate summary. Each function takes one part and
returns a `Table` (or None when that part holds nothing to tabulate)."""

from __future__ import annotations

from typing import Any

from cuer_agent.report import _reference as ref
from cuer_agent.report._format import DASH, ci, hop_key, mean_ci, num, pval, share, signed
from cuer_agent.report._render import Table

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


def roles_items(items: dict[str, int], n_items: Any) -> Table | None:
    """Item-level labels: count and share of the CUE-R targets."""
    if not items:
        return None
    total = n_items if isinstance(n_items, int) and n_items else sum(
        v for v in items.values() if isinstance(v, int))
    rows = tuple((label, share(items[label], total))
                 for label in _ordered(list(items), ROLE_ORDER))
    return Table(caption=f"Evidence roles, item level (one label per target, n = {total})",
                 headers=("role", "targets (share)"), rows=rows)


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
    if cell.get("errors"):
        text += f"; {cell['errors']} ended in an error or a parse failure (apart)"
    return text


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
    """What a diagnoser reads: the trace, the gold answer, a probe and its oracle."""
    text = "trace" + (" + gold" if d.get("uses_gold") else "")
    if d.get("probing"):
        text += " + probe (gold oracle)" if d.get("uses_gold_oracle") else " + probe (gold-free)"
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
    """Diagnoser × depth: exact-hop accuracy with its Wilson and example-clustered CIs, the
    independence baseline and whether it beats it, the descriptive flag, chance's analytic
    expectation, and the paper's values."""
    rows = []
    for name, d in diagnosers.items():
        d = d or {}
        analytic = d.get("expected_acc_analytic") or {}
        for depth in sorted(d.get("by_depth") or {}, key=hop_key):
            c = d["by_depth"][depth] or {}
            beats = _BEATS.get(c.get("beats_independence"), DASH)
            rows.append((name, str(depth), str(c.get("n", DASH)), num(c.get("acc"), 2),
                         ci(c.get("ci"), 2) or DASH, ci(c.get("ci_clustered"), 2) or DASH,
                         num(c.get("independence"), 2), beats,
                         "yes" if c.get("descriptive_only") else "no",
                         num(analytic.get(str(depth)), 2), *_paper_depth(name, str(depth))))
        overall = d.get("exact_hop_acc") or {}
        rows.append((name, "all", str(d.get("n", DASH)), num(overall.get("mean"), 2),
                     ci(overall.get("ci"), 2) or DASH, ci(overall.get("ci_clustered"), 2) or DASH,
                     num(d.get("independence"), 2), DASH, "",
                     num(analytic.get("overall"), 2), DASH, DASH))
    return Table(caption="Exact-hop accuracy by fault depth (over traces still wrong after "
                         "re-execution)",
                 headers=("diagnoser", "depth", "failed n", "exact-hop acc", "95% CI (Wilson)",
                          "clustered CI", "independence", "beats it", "descriptive only",
                          "analytic expectation", "paper: all faults",
                          "paper: content corruption"),
                 rows=tuple(rows),
                 footnote=(f"Each depth pools a different fault mix — {fault_mix(diagnosers)}. "
                           "Independence: Σ_h P(pred = h)·P(true = h), what the diagnoser's own "
                           "blame histogram scores blind to the truth; beats it: the lower "
                           "end of the Wilson interval above that. Paper columns: "
                           f"{ref.DIAG_SETUP} — the paper's setup, not ours. Descriptive "
                           "only: fewer than 10 failed traces at that depth. Clustered CI: "
                           "bootstrap over examples, not traces."))


def diagnoser_fault_depths(diagnosers: dict[str, Any]) -> Table | None:
    """Diagnoser × fault × depth: exact-hop accuracy in each unpooled cell."""
    rows = []
    for name, d in diagnosers.items():
        for fault, by_depth in sorted(((d or {}).get("by_fault_depth") or {}).items()):
            cells = [f"{num(c.get('acc'), 2)} {ci(c.get('ci'), 2)} (n={c.get('n', 0)})"
                     + (DESCRIPTIVE if c.get("descriptive_only") else "")
                     for _, c in sorted(by_depth.items(), key=lambda kv: hop_key(kv[0]))]
            depths = ", ".join(sorted(by_depth, key=hop_key))
            rows.append((name, fault, depths, " | ".join(cells)))
    if not rows:
        return None
    return Table(caption="Exact-hop accuracy per fault and depth (unpooled cells, Wilson CIs)",
                 headers=("diagnoser", "fault", "depths", "accuracy by depth"),
                 rows=tuple(rows),
                 footnote=f"{DESCRIPTIVE} fewer than 10 failed traces: descriptive only.")


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
        rows.append((name, _kind(d), str(d.get("n", DASH)), str(d.get("errors", DASH)),
                     f"{num(d.get('clean_blame_rate'), 2)} (n={d.get('clean_n', 0)})",
                     mean_ci(d.get("stage_acc"), 2), mean_ci(d.get("hop_tol_acc"), 2),
                     mean_ci(d.get("ancestor_hit"), 2), mean_ci(d.get("mae"), 2),
                     num(d.get("calls_per_diagnosis"), 2), num(d.get("tokens_per_diagnosis"), 1),
                     num(cost.get("calls"), 2), num(cost.get("tokens"), 1)))
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

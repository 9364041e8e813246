"""report.md of `cuer-agent diagnose --traces`, from its summary alone."""

from __future__ import annotations

from cuer_agent.studies._common.summary_model import Interval
from cuer_agent.studies.diagnose.summary_model import (
    DiagnoserSummary,
    DiagnoserTraces,
    Histograms,
    TracesSummary,
)

NO_BUDGET = ("The hop budget the agent ran with is not known (no --hops, and the traces do "
             "not record it), and it is not guessed: trace-rule and chain-rule place no "
             "premature stop; give --hops to score them as the study does.")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _reads(entry: DiagnoserTraces) -> str:
    reads = ["the observable trace"]
    if entry.uses_gold:
        reads.append("the gold answer")
    text = ", ".join(reads)
    return text + (f" ({entry.stand_in})" if entry.stand_in else "")


def report_markdown(summary: TracesSummary) -> str:
    lines = ["# Diagnoses of imported traces", "",
             f"Source: `{summary.source}`" + (f"; gold: `{summary.gold}`"
                                              if summary.gold else "; no gold"),
             "",
             f"- traces: {summary.traces}, mapped: {summary.mapped} "
             f"({', '.join(f'{k} {v}' for k, v in summary.mapping.items()) or 'none'})",
             f"- spans left out: {summary.unmapped_spans.n} (listed in unmapped.jsonl)"]
    for reason, n in summary.unmapped_spans.by_reason.items():
        lines.append(f"  - {n} × {reason}")
    for row in summary.not_mapped:
        lines.append(f"- trace {row['trace_id']} not mapped: {row['reason']}")
    modes = summary.modes
    lines += ["", "## Where each diagnoser puts the blame", "",
              "Share of a diagnoser's diagnoses naming each hop (0 = the answer step, "
              "n+1 = the agent stopped too early). Without labels this says what a "
              "diagnoser blames, not whether it is right.", ""]
    if len(modes) > 1:
        lines += ["The traces come from more than one system ("
                  + ", ".join(f"{m}: {n}" for m, n in modes.items())
                  + "), so each is shown apart: a single-shot trace has one hop, so its "
                    "blame can only fall on hop 0, 1 or 2.", ""]
    lines += ["| diagnoser | reads | traces | n | errors | blame by hop | stage |",
              "|---|---|---|---|---|---|---|"]
    for name, entry in summary.diagnosers.items():
        parts: dict[str, Histograms] = (entry.by_mode if len(modes) > 1
                                        else {"all": entry})
        for mode, part in parts.items():
            hist = ", ".join(f"{h}: {v:.2f}" for h, v in part.blame_hist.items()) or "—"
            stages = ", ".join(f"{s}: {v:.2f}" for s, v in part.stage_hist.items()) or "—"
            lines.append(f"| {name} | {_reads(entry)} | {mode} | {part.n} | "
                         f"{part.errors} | {hist} | {stages} |")
    scored = {k: v.scored for k, v in summary.diagnosers.items() if v.scored is not None}
    lines += _accuracy(summary, scored) if scored else [
        "", "No trace carries a label (a `--labels` file or a certified fault record), so "
        "no accuracy is reported."]
    return "\n".join(lines) + "\n"


def _ci(value: float | None, ci: Interval | None) -> str:
    low, high = ci or (None, None)
    return f"{_pct(value)} [{_pct(low)}, {_pct(high)}]"


def _accuracy(summary: TracesSummary, scored: dict[str, DiagnoserSummary]) -> list[str]:
    labels = summary.labels
    source = ("the labels file `" + labels.source + "`" if labels.source != "records"
              else "the exported intervention records")
    chance = labels.chance_expected
    chance_overall = chance.overall if chance else None
    rule = scored.get("trace-rule")
    lines = ["", "## Accuracy against the labelled first-error hop", "",
             f"{labels.labelled} traces carry a label, from {source}; labels are read for "
             "scoring only, never shown to a diagnoser. Exact-hop and stage accuracy over the "
             f"{labels.scored_failed} failed traces (n), with 95% Wilson intervals; the "
             f"clean blame rate over the {labels.scored_clean} correct ones (a diagnoser "
             "should name no hop there). Coverage: share of failed traces where it names a "
             "hop (>= 1); precision: its accuracy there. Independence: what its own blame "
             "histogram scores blind to the truth. Chance: a uniform hop of the trace, "
             f"expected {_pct(chance_overall)}."
             + (f" trace-rule (what the agent's trace says of itself) scores "
                f"{_pct(rule.exact_hop_acc.mean)}." if rule else
                " Add `trace-rule` to --diagnosers to see the control beside them.")
             + ("" if summary.hop_budget is not None else f" {NO_BUDGET}"), ""]
    if labels.unmatched:
        lines += [f"{len(labels.unmatched)} labels name a trace not in the file and are "
                  "not scored: " + ", ".join(labels.unmatched[:5])
                  + (" …" if len(labels.unmatched) > 5 else ""), ""]
    lines += ["| diagnoser | n | exact-hop acc [95% Wilson] | stage acc [95% Wilson] | "
              "coverage / precision | independence | beats chance | beats trace-rule | "
              "clean blame rate |", "|---|---|---|---|---|---|---|---|---|"]
    for name, s in scored.items():
        acc, ab = s.exact_hop_acc, s.abstention
        low = acc.ci[0] if acc.ci else None
        beats_chance = ("—" if low is None or chance_overall is None
                        else "yes" if low > chance_overall else "no")
        rule_mean = rule.exact_hop_acc.mean if rule else None
        beats_rule = ("—" if low is None or rule_mean is None or name == "trace-rule"
                      else "yes" if low > rule_mean else "no")
        lines.append(f"| {name} | {s.n} | {_ci(acc.mean, acc.ci)} | "
                     f"{_ci(s.stage_acc.mean, s.stage_acc.ci)} | "
                     f"{_pct(ab.coverage)} / {_pct(ab.precision)} | "
                     f"{_pct(s.independence)} | {beats_chance} | {beats_rule} | "
                     f"{_pct(s.clean_blame_rate)} |")
    depths = sorted({d for s in scored.values() for d in s.by_depth}, key=int)
    lines += ["", "Exact-hop accuracy by labelled hop (n failed traces; ▲ the lower end of "
              "its Wilson interval lies above trace-rule's accuracy there):", "",
              "| diagnoser | " + " | ".join(f"hop {d}" for d in depths) + " |",
              "|---|" + "---|" * len(depths)]
    for name, s in scored.items():
        cells = []
        for d in depths:
            cell = s.by_depth.get(d)
            cells.append("—" if cell is None else
                         f"{_pct(cell.acc)}{' ▲' if cell.beats_trace_rule else ''} "
                         f"(n={cell.n})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def scores_line(summary: TracesSummary) -> str:
    """One console line per scored diagnoser: exact-hop accuracy, its interval, clean blame."""
    labels = summary.labels
    out = [f"scored on {labels.scored_failed} failed and {labels.scored_clean} correct "
           "labelled traces (exact-hop acc [95% Wilson], clean blame):"]
    if summary.hop_budget is None:
        out.insert(0, NO_BUDGET)
    for name, entry in summary.diagnosers.items():
        if (s := entry.scored) is not None:
            out.append(f"  {name:18s} {_ci(s.exact_hop_acc.mean, s.exact_hop_acc.ci)}  "
                       f"clean blame {_pct(s.clean_blame_rate)}")
    return "\n".join(out)

"""report.md of `cuer-agent diagnose --traces`, from its summary alone."""

from __future__ import annotations

from typing import Any


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _reads(entry: dict[str, Any]) -> str:
    reads = ["the observable trace"]
    if entry["uses_gold"]:
        reads.append("the gold answer")
    text = ", ".join(reads)
    return text + (f" ({entry['stand_in']})" if entry.get("stand_in") else "")


def report_markdown(summary: dict[str, Any]) -> str:
    lines = ["# Diagnoses of imported traces", "",
             f"Source: `{summary['source']}`" + (f"; gold: `{summary['gold']}`"
                                                  if summary.get("gold") else "; no gold"),
             "",
             f"- traces: {summary['traces']}, mapped: {summary['mapped']} "
             f"({', '.join(f'{k} {v}' for k, v in summary['mapping'].items()) or 'none'})",
             f"- spans left out: {summary['unmapped_spans']['n']} (listed in unmapped.jsonl)"]
    for reason, n in summary["unmapped_spans"]["by_reason"].items():
        lines.append(f"  - {n} × {reason}")
    for row in summary["not_mapped"]:
        lines.append(f"- trace {row['trace_id']} not mapped: {row['reason']}")
    modes = summary.get("modes", {})
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
    for name, entry in summary["diagnosers"].items():
        parts = entry["by_mode"].items() if len(modes) > 1 else [("all", entry)]
        for mode, part in parts:
            hist = ", ".join(f"{h}: {v:.2f}" for h, v in part["blame_hist"].items()) or "—"
            stages = ", ".join(f"{s}: {v:.2f}" for s, v in part["stage_hist"].items()) or "—"
            lines.append(f"| {name} | {_reads(entry)} | {mode} | {part['n']} | "
                         f"{part['errors']} | {hist} | {stages} |")
    scored = {k: v["scored"] for k, v in summary["diagnosers"].items() if "scored" in v}
    if scored:
        labels = summary["labels"]
        lines += ["", "## Accuracy against the certified fault hop", "",
                  f"{labels['labelled']} traces carry a label (a certified fault or a clean "
                  "run). Scored as the study scores them: exact-hop accuracy over the "
                  f"{labels['scored_failed']} faulted runs that failed (n), the clean blame "
                  f"rate over the {labels['scored_clean']} clean runs that were correct. "
                  "Labels come from the exported intervention records, never from a "
                  "diagnoser's view.", "",
                  "| diagnoser | n | exact-hop acc | 95% Wilson | independence baseline | "
                  "clean blame rate |", "|---|---|---|---|---|---|"]
        for name, s in scored.items():
            acc = s["exact_hop_acc"]
            ci = acc.get("ci") or [None, None]
            lines.append(f"| {name} | {s['n']} | {_pct(acc['mean'])} | "
                         f"[{_pct(ci[0])}, {_pct(ci[1])}] | {_pct(s['independence'])} | "
                         f"{_pct(s.get('clean_blame_rate'))} |")
    else:
        lines += ["", "No trace carries a label (a certified fault record), so no accuracy "
                  "is reported."]
    return "\n".join(lines) + "\n"

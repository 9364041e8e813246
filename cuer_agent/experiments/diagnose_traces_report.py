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
    lines += ["", "## Where each diagnoser puts the blame", "",
              "Share of a diagnoser's diagnoses naming each hop (0 = the answer step, "
              "n+1 = the agent stopped too early). Without labels this says what a "
              "diagnoser blames, not whether it is right.", "",
              "| diagnoser | reads | n | errors | blame by hop | stage |",
              "|---|---|---|---|---|---|"]
    for name, entry in summary["diagnosers"].items():
        hist = ", ".join(f"{h}: {v:.2f}" for h, v in entry["blame_hist"].items()) or "—"
        stages = ", ".join(f"{s}: {v:.2f}" for s, v in entry["stage_hist"].items()) or "—"
        lines.append(f"| {name} | {_reads(entry)} | {entry['n']} | {entry['errors']} | "
                     f"{hist} | {stages} |")
    scored = {k: v["scored"] for k, v in summary["diagnosers"].items() if "scored" in v}
    if scored:
        lines += ["", "## Accuracy against the certified fault hop", "",
                  f"{summary['labels']['scored']} traces carry a label and are scored as the "
                  "study scores them (faulted runs that failed; clean runs that were "
                  "correct). Labels come from the exported intervention records, never "
                  "from a diagnoser's view.", "",
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

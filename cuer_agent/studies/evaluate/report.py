"""The headline tables `cuer-agent evaluate` prints, and the report files it writes."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cuer_agent.studies.cuer.report import cuer_table
from cuer_agent.studies.evaluate.caveats import SHOWN
from cuer_agent.studies.propagation.report import propagation_tables


def diagnoser_table(summary: dict[str, Any]) -> Table:
    """Per diagnoser: what it sees, exact-hop accuracy by depth next to its independence
    baseline (✗: not above it), false blame on clean runs, stage accuracy, cost."""
    diagnosers = summary["diagnosers"]
    depths = sorted({h for d in diagnosers.values() for h in d.get("by_depth", {})}, key=int)
    table = Table(title="Exact-hop accuracy by injected depth (failed traces)")
    table.add_column("diagnoser", no_wrap=True)
    table.add_column("reads", no_wrap=True)
    for h in depths:
        table.add_column(f"depth {h}", justify="right", no_wrap=True)
    for col in ("cover/prec", "clean", "stage", "calls"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, d in diagnosers.items():
        cells = []
        for h in depths:
            cell = d["by_depth"].get(h)
            if not cell or cell["acc"] is None:
                cells.append("—")
                continue
            flag = "*" if cell["descriptive_only"] else ""
            mark = "" if cell.get("beats_independence", True) else "✗"
            mark += "▲" if cell.get("beats_trace_rule") else ""
            cells.append(f"{cell['acc']:.2f}{flag}/{cell.get('independence', 0):.2f}{mark}")
        stage = (d.get("stage_acc") or {}).get("mean")
        blame = d.get("clean_blame_rate")
        label = name + (" †" if d.get("stand_in") else "")
        cover = d.get("abstention") or {}
        covers = ("—" if cover.get("coverage") is None else
                  f"{cover['coverage']:.2f}/"
                  + ("—" if cover.get("precision") is None else f"{cover['precision']:.2f}"))
        table.add_row(label, _reads(d), *cells, covers,
                      "—" if blame is None else f"{blame:.2f}",
                      "—" if stage is None else f"{stage:.2f}",
                      f"{d['calls_per_diagnosis']:.1f}" if d.get("calls_per_diagnosis")
                      else "—")
    return table


def _reads(d: dict[str, Any]) -> str:
    """Short form of what a diagnoser reads besides the trace (the report spells it out)."""
    parts = (["gold"] if d.get("uses_gold") else []) + (
        ["probe+oracle"] if d.get("uses_gold_oracle") else ["probe"] if d.get("probing") else [])
    parts += ["env"] if d.get("uses_environment_oracle") else []
    return "+".join(parts) or "trace"


def construction_table(summary: dict[str, Any]) -> Table:
    """Per fault: invisibility AUC and VERIFY's detection; VERIFY's false alarms and the
    reader's table ablation in the caption."""
    verify = summary.get("verify") or {}
    alarm = verify.get("false_alarm") or {}
    reader = summary.get("reader") or {}
    plain = reader.get("without_relation_table") or {}
    caption = (f"VERIFY false alarms on clean hops: {alarm.get('hits', 0)}/{alarm.get('n', 0)}"
               + (f". Reader clean accuracy {reader['accuracy']:.2f}, relation table off "
                  f"{plain['accuracy']:.2f}" if reader.get("accuracy") is not None
                  and plain.get("accuracy") is not None else "") + ".")
    table = Table(title="What the figures rest on — invisibility AUC (0.5 = invisible) and "
                        "VERIFY's detection", caption=caption)
    for col in ("fault", "AUC [95% CI]", "trees", "best feature", "VERIFY flagged"):
        table.add_column(col, justify="left" if col == "fault" else "right")
    invisible = (summary.get("invisibility") or {}).get("faults") or {}
    detection = verify.get("detection") or {}
    for fault in sorted(set(invisible) | set(detection)):
        inv, det = invisible.get(fault) or {}, detection.get(fault) or {}
        auc = ("—" if inv.get("auc") is None else
               f"{inv['auc']:.2f} [{inv['ci'][0]:.2f}, {inv['ci'][1]:.2f}]"
               + (" ✗" if inv.get("detectable") else ""))
        trees = inv.get("auc_independent")
        table.add_row(fault, auc, "—" if trees is None else f"{trees:.2f}",
                      str(inv.get("top_feature") or "—"),
                      "—" if det.get("rate") is None else f"{det['hits']}/{det['n']}")
    return table


def print_headline(summary: dict[str, Any], invocation: dict[str, Any]) -> Console:
    """Print the headline tables, the caveats and the ledger; the console, for more."""
    console = Console(width=max(Console().width, 120))
    console.print(cuer_table(summary["single_shot"], title="Single-shot CUE-R baseline"))
    for table in propagation_tables({**summary["agentic"]}):
        console.print(table)
    console.print(construction_table(summary))
    console.print(diagnoser_table(summary))
    console.print("Cells: accuracy / independence baseline.  * fewer than 10 failed traces: "
                  "descriptive only.  † rule-based stand-in.  ✗ not above its independence "
                  "baseline.  ▲ above the trace-rule control.  env: re-runs hops against a "
                  "clean tool (environment oracle).  cover/prec: share of failures it names a "
                  "hop on, its accuracy there.  clean: share of clean, correct runs on "
                  "which it names a hop (clean blame).")
    caveats = summary["caveats"]
    console.print("Read this before quoting a number (the caveats that move these numbers "
                  "most):")
    for caveat in caveats[:SHOWN]:
        console.print(f"- {caveat['text']}")
    if len(caveats) > SHOWN:
        console.print(f"  ({len(caveats) - SHOWN} more in report.md)")
    ledger = summary["ledger"]
    prefix = summary["agentic"]["prefix_calls"]
    console.print(f"LLM-skill requests: {ledger['requests']} by the studies ({ledger['calls']} "
                  f"distinct) + {ledger['diagnoser_requests']} by the diagnosers. Prefix "
                  f"requests recomputed by {prefix['forks']} forks: {prefix['total']}. This "
                  f"invocation: {invocation['calls']} backend calls (each distinct request once "
                  f"— the design minimum) and {invocation['cache_hits']} repeats served by the "
                  f"response cache" + (f"; {invocation['reused']} more repeats were not made, "
                                       "inside repeated executions reused whole"
                                       if invocation.get("reused") else "") + ".")
    return console

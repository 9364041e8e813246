"""The headline tables `cuer-agent evaluate` prints, and the report files it writes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.table import Table

from cuer_agent.studies.cuer.report import cuer_table
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.evaluate.caveats import SHOWN
from cuer_agent.studies.evaluate.summary_model import EvaluateSummary
from cuer_agent.studies.propagation.report import propagation_tables


def diagnoser_table(summary: EvaluateSummary) -> Table:
    """Per diagnoser: what it sees, exact-hop accuracy by depth next to its independence
    baseline (✗: not above it), false blame on clean runs, stage accuracy, cost."""
    diagnosers = summary.diagnosers
    depths = sorted({h for d in diagnosers.values() for h in d.by_depth}, key=int)
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
            cell = d.by_depth.get(h)
            if cell is None or cell.acc is None:
                cells.append("—")
                continue
            flag = "*" if cell.descriptive_only else ""
            mark = "" if cell.beats_independence else "✗"
            mark += "▲" if cell.beats_trace_rule else ""
            cells.append(f"{cell.acc:.2f}{flag}/{cell.independence:.2f}{mark}")
        stage = d.stage_acc.mean
        blame = d.clean_blame_rate
        label = name + (" †" if d.stand_in else "")
        cover = d.abstention
        covers = ("—" if cover.coverage is None else
                  f"{cover.coverage:.2f}/"
                  + ("—" if cover.precision is None else f"{cover.precision:.2f}"))
        table.add_row(label, _reads(d), *cells, covers,
                      "—" if blame is None else f"{blame:.2f}",
                      "—" if stage is None else f"{stage:.2f}",
                      f"{d.calls_per_diagnosis:.1f}" if d.calls_per_diagnosis else "—")
    return table


def natural_table(summary: EvaluateSummary) -> Table:
    """Per diagnoser on the natural failures: pooled exact-hop accuracy with its Wilson
    interval, per first-error hop, and clean blame."""
    part = summary.natural
    counts = part.counts
    depths = sorted({h for d in part.diagnosers.values() for h in d.by_depth}, key=int)
    table = Table(title=f"Natural failures: {counts.labelled} of {counts.failed} clean runs that "
                        f"ended wrong, placed by {counts.rule} (exact-hop accuracy)")
    for col in ("diagnoser", "pooled [95% CI]", *(f"hop {h}" for h in depths), "clean"):
        table.add_column(col, justify="left" if col == "diagnoser" else "right",
                         no_wrap=True)
    for name, d in part.diagnosers.items():
        acc, ci = d.exact_hop_acc.mean, d.exact_hop_acc.ci
        pooled = "—" if acc is None else f"{acc:.2f}" + (
            "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")
        cells = ["—" if (c := d.by_depth.get(h)) is None or c.acc is None
                 else f"{c.acc:.2f} ({c.n})" for h in depths]
        blame = d.clean_blame_rate
        table.add_row(name, pooled, *cells, "—" if blame is None else f"{blame:.2f}")
    return table


def _reads(d: DiagnoserSummary) -> str:
    """Short form of what a diagnoser reads besides the trace (the report spells it out)."""
    parts = (["gold"] if d.uses_gold else []) + (
        ["probe+oracle"] if d.uses_gold_oracle else ["probe"] if d.probing else [])
    parts += ["env"] if d.uses_environment_oracle else []
    return "+".join(parts) or "trace"


def construction_table(summary: EvaluateSummary) -> Table:
    """Per fault: invisibility AUC and VERIFY's detection; VERIFY's false alarms and the
    reader's table ablation in the caption."""
    verify = summary.verify
    alarm = verify.false_alarm
    reader = summary.reader
    plain = reader.without_relation_table
    caption = (f"VERIFY false alarms on clean hops: {alarm.hits}/{alarm.n}"
               + (f". Reader clean accuracy {reader.accuracy:.2f}, relation table off "
                  f"{plain.accuracy:.2f}" if reader.accuracy is not None
                  and plain is not None and plain.accuracy is not None else "") + ".")
    table = Table(title="What the figures rest on — invisibility AUC (0.5 = invisible) and "
                        "VERIFY's detection", caption=caption)
    for col in ("fault", "AUC [95% CI]", "trees", "best feature", "VERIFY flagged"):
        table.add_column(col, justify="left" if col == "fault" else "right")
    invisible = summary.invisibility.faults
    detection = verify.detection
    for fault in sorted(set(invisible) | set(detection)):
        inv, det = invisible.get(fault), detection.get(fault)
        auc = ("—" if inv is None or inv.auc is None else
               f"{inv.auc:.2f}" + ("" if inv.ci is None else
                                   f" [{inv.ci[0]:.2f}, {inv.ci[1]:.2f}]")
               + (" ✗" if inv.detectable else ""))
        trees = None if inv is None else inv.auc_independent
        table.add_row(fault, auc, "—" if trees is None else f"{trees:.2f}",
                      (inv.top_feature if inv is not None else None) or "—",
                      "—" if det is None or det.rate is None else f"{det.hits}/{det.n}")
    return table


def print_headline(summary: EvaluateSummary, invocation: Mapping[str, object]) -> Console:
    """Print the evaluate run's headline tables, its weightiest caveats and what it cost
    (`invocation`: this process's backend ledger); the console, for more."""
    console = Console(width=max(Console().width, 120))
    console.print(cuer_table(summary.single_shot, title="Single-shot CUE-R baseline"))
    for table in propagation_tables(summary.agentic):
        console.print(table)
    console.print(construction_table(summary))
    console.print(diagnoser_table(summary))
    console.print("Cells: accuracy / independence baseline.  * fewer than 10 failed traces: "
                  "descriptive only.  † rule-based stand-in.  ✗ not above its independence "
                  "baseline.  ▲ above the trace-rule control.  env: re-runs hops against a "
                  "clean tool (environment oracle).  cover/prec: share of failures it names a "
                  "hop on, its accuracy there.  clean: share of clean, correct runs on "
                  "which it names a hop (clean blame).")
    if summary.natural.diagnosers:
        console.print(natural_table(summary))
        console.print("Hop 0: every gold step found, the answer still wrong; n+1: stopped "
                      "with steps left. Labels: natural/labels.jsonl; spans: "
                      "natural/spans.jsonl.")
    caveats = summary.caveats
    console.print("Read this before quoting a number (the caveats that move these numbers "
                  "most):")
    for caveat in caveats[:SHOWN]:
        console.print(f"- {caveat.text}")
    if len(caveats) > SHOWN:
        console.print(f"  ({len(caveats) - SHOWN} more in report.md)")
    ledger = summary.ledger
    prefix = summary.agentic.prefix_calls
    console.print(f"LLM-skill requests: {ledger.requests} by the studies ({ledger.calls} "
                  f"distinct) + {ledger.diagnoser_requests} by the diagnosers. Prefix "
                  f"requests recomputed by {prefix.forks} forks: {prefix.total}. This "
                  f"invocation: {invocation['calls']} backend calls (each distinct request once "
                  f"— the design minimum) and {invocation['cache_hits']} repeats served by the "
                  f"response cache" + (f"; {invocation['reused']} more repeats were not made, "
                                       "inside repeated executions reused whole"
                                       if invocation.get("reused") else "") + ".")
    return console

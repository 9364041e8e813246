"""Running the propagation study into a run directory and printing its headline tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cuer_agent.data import Dataset
from cuer_agent.execution import Executor
from cuer_agent.experiments.propagation import (
    RECORDS,
    TRACES,
    PropagationConfig,
    run_propagation,
)
from cuer_agent.experiments.propagation_summary import summarize_propagation
from cuer_agent.experiments.run_agent import ledger_from_rows, retriever_factory
from cuer_agent.experiments.summaries import PropagateSummary
from cuer_agent.parallel import Parallelism
from cuer_agent.runs import RunDir


def run_and_summarize(dataset: Dataset, executor: Executor, run_dir: RunDir,
                      config: PropagationConfig, *, show_progress: bool = True,
                      parallel: Parallelism | int = 1) -> dict[str, Any]:
    run_propagation(dataset, executor, run_dir, config,
                    retriever_for=retriever_factory(dataset), show_progress=show_progress,
                    parallel=parallel)
    traces = run_dir.rows(TRACES)
    summary = summarize_propagation(run_dir.rows(RECORDS), traces, config)
    summary["ledger"] = ledger_from_rows(traces)
    summary["config"] = config.model_dump(mode="json")
    run_dir.write_summary(summary, PropagateSummary)
    return summary


def propagation_tables(summary: dict[str, Any]) -> list[Table]:
    clean = summary["clean"]
    recovery = Table(title=f"Recovery after a fault at hop h (clean n={clean['n']}, "
                           f"accuracy {clean['accuracy']}; persistence "
                           f"{summary.get('persistence', 'once')})",
                     caption="r = runs that retried hop h, e = effective injections, x = runs "
                             "that ended in a request error or a parse failure (counted apart); "
                             "forced = the agent did "
                             "not choose to stop")
    hops = sorted({h for per_hop in summary["faults"].values() for h in per_hop}, key=int)
    recovery.add_column("fault")
    for h in hops:
        recovery.add_column(f"hop {h}: recovered/injected", justify="right")
    for fault, per_hop in summary["faults"].items():
        cells = []
        for h in hops:
            cell = per_hop.get(h)
            cells.append("—" if not cell or not cell["injected"] else
                         f"{cell['recovered']}/{cell['injected']} ({cell['recovery']:.2f})"
                         + (f" r{cell['retried']} e{cell['effective']}" if "effective" in cell
                            else "")
                         + (f" x{cell['errors']}" if cell.get("errors") else ""))
        forced = any(c.get("forced") for c in per_hop.values())
        recovery.add_row(fault + (" (forced)" if forced else ""), *cells)
    cert = summary["tampering_certification"]
    tampering = Table(title=f"Content tampering (certified {cert['certified']}"
                            f"/{cert['eligible']} eligible hops)")
    for col in ("hop", "injected", "resisted", "absorbed", "derailed", "query contaminated"):
        tampering.add_column(col, justify="right")
    for h, cell in summary["tampering"].items():
        tampering.add_row(h, *(str(cell[k]) for k in ("injected", "resisted", "absorbed",
                                                      "derailed", "contaminated")))
    return [recovery, tampering]

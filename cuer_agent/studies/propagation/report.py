"""Running the propagation study into a run directory and printing its headline tables."""

from __future__ import annotations

from rich.table import Table

from cuer_agent.config import PropagationConfig
from cuer_agent.data import Dataset
from cuer_agent.execution import Executor
from cuer_agent.parallel import Parallelism
from cuer_agent.run_dir import RunDir
from cuer_agent.studies._common.dataset_run import ledger_from_rows, retriever_factory
from cuer_agent.studies._common.summary_model import extended
from cuer_agent.studies.propagation.invisibility import invisibility
from cuer_agent.studies.propagation.rows import record_rows, trace_rows
from cuer_agent.studies.propagation.runner import RECORDS, TRACES, run_propagation
from cuer_agent.studies.propagation.summary import summarize_propagation, verify_rates
from cuer_agent.studies.propagation.summary_model import (
    FaultCell,
    PropagateSummary,
    PropagationResults,
)


def run_and_summarize(dataset: Dataset, executor: Executor, run_dir: RunDir,
                      config: PropagationConfig, *, show_progress: bool = True,
                      parallel: Parallelism | int = 1) -> PropagateSummary:
    """Run the propagation study into `run_dir`, write `summary.json`, and return it as
    its model."""
    run_propagation(dataset, executor, run_dir, config,
                    retriever_for=retriever_factory(dataset), show_progress=show_progress,
                    parallel=parallel)
    raw_traces = run_dir.rows(TRACES)
    traces = trace_rows(raw_traces, run_dir.path / TRACES)
    records = record_rows(run_dir.rows(RECORDS), run_dir.path / RECORDS)
    results = summarize_propagation(records, traces, config)
    summary = extended(
        results, PropagateSummary, verify=verify_rates(records, config.faults),
        invisibility=invisibility(traces, config.faults),
        ledger=ledger_from_rows(raw_traces),
        # every field of the config is written, as given or defaulted
        config=PropagationConfig.model_validate(config.model_dump(mode="json")))
    return run_dir.write_model(summary)


def propagation_tables(summary: PropagationResults) -> list[Table]:
    """The console's recovery table (fault × hop) and content-tampering table."""
    clean = summary.clean
    recovery = Table(title=f"Recovery over effective injections at hop h — the agent | the "
                           f"same injections, retries off (clean n={clean.n}, accuracy "
                           f"{clean.accuracy}; persistence {summary.persistence})",
                     caption="e = effective injections (hop h's first attempt changed), v = "
                             "VERIFY flagged, r = retried hop h, x = ended in a request error "
                             "or a parse failure (apart); forced = the agent did not choose to "
                             "stop (its row counts every injection)")
    hops = sorted({h for per_hop in summary.faults.values() for h in per_hop}, key=int)
    recovery.add_column("fault")
    for h in hops:
        recovery.add_column(f"hop {h}", justify="right")
    for fault, per_hop in summary.faults.items():
        forced = any(c.forced for c in per_hop.values())
        cells = [_console_cell(per_hop.get(h), forced) for h in hops]
        recovery.add_row(fault + (" (forced)" if forced else ""), *cells)
    cert = summary.tampering_certification
    tampering = Table(title=f"Content tampering (certified {cert.certified}"
                            f"/{cert.eligible} eligible hops)")
    for col in ("hop", "injected", "resisted", "absorbed", "derailed", "query contaminated"):
        tampering.add_column(col, justify="right")
    for h, cell in summary.tampering.items():
        tampering.add_row(h, *(str(count) for count in (cell.injected, cell.resisted,
                                                        cell.absorbed, cell.derailed,
                                                        cell.contaminated)))
    return [recovery, tampering]


def _console_cell(cell: FaultCell | None, forced: bool) -> str:
    if cell is None or not cell.injected:
        return "—"
    if forced:
        return f"{cell.recovered}/{cell.injected} ({cell.recovery:.2f})"
    if not cell.effective:
        return f"e0 of {cell.injected}"
    text = f"{cell.recovered_effective}/{cell.effective} ({cell.recovery_effective:.2f})"
    control = cell.control
    if control is not None:
        text += f" | {control.recovered}/{control.n}"
    text += f" v{cell.verify_detected} r{cell.retried}"
    return text + (f" x{cell.errors}" if cell.errors else "")

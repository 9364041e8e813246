"""Writing the CUE-R summary and printing it in the layout of the paper's main table."""

from __future__ import annotations

from collections.abc import Mapping

from rich.table import Table

from cuer_agent.config import CuerConfig
from cuer_agent.metrics.stats import MIN_CELL
from cuer_agent.run_dir import RunDir
from cuer_agent.studies._common.dataset_run import ledger_from_rows
from cuer_agent.studies._common.summary_model import extended
from cuer_agent.studies.cuer.evidence_roles import roles_summary
from cuer_agent.studies.cuer.runner import RECORDS, TRACES, record_rows
from cuer_agent.studies.cuer.summary import summarize_cuer
from cuer_agent.studies.cuer.summary_model import CuerCondition, CuerSummary, DeltaStat

# The paper's qualitative pattern: REMOVE and REPLACE hurt correctness, DUPLICATE does not.
PAPER_PATTERN = {"remove": "hurts", "replace": "hurts", "duplicate": "preserves"}
FLOOR = 0.05
"""Below this original correctness, every correctness delta is ~0 by floor effect."""


def no_verdict(conditions: Mapping[str, CuerCondition]) -> str | None:
    """Why the data carry no correctness verdict at all (None: they do)."""
    original = conditions.get("original")
    mean = None if original is None else original.correctness.mean
    if mean is not None and mean < FLOOR:
        return (f"No correctness verdict: the original answers {mean:.0%} correctly (below "
                f"{FLOOR:.0%}), so every correctness delta is ~0 by floor effect, whatever the "
                "evidence did.")
    n = 0 if original is None else original.n
    if n < MIN_CELL:
        return f"No verdict: only {n} examples (fewer than {MIN_CELL})."
    return None


def pattern_findings(conditions: Mapping[str, CuerCondition]) -> list[str]:
    """One sentence per main operator: does our Δcorrectness follow the paper's pattern?
    Suppressed, with the reason, where the data cannot carry a verdict."""
    if (reason := no_verdict(conditions)) is not None:
        return [reason]
    findings = []
    for name, expected in PAPER_PATTERN.items():
        cond = conditions.get(name)
        delta = None if cond is None or cond.delta is None else cond.delta.correctness
        if cond is None or delta is None or delta.ci is None:
            continue
        if cond.n < MIN_CELL:
            findings.append(f"{name.upper()}: no verdict, only {cond.n} examples.")
            continue
        lo, hi = delta.ci
        observed = "hurts" if lo > 0 else "helps" if hi < 0 else "preserves"
        verdict = "as in the paper" if observed == expected else "UNLIKE the paper"
        findings.append(f"{name.upper()} {observed} correctness (Δ {delta.mean:+.3f}, 95% CI "
                        f"[{lo:+.3f}, {hi:+.3f}]) — {verdict}, where it {expected} correctness.")
    return findings


def cuer_summary(run_dir: RunDir, config: CuerConfig) -> CuerSummary:
    """The CUE-R study's summary, from the run directory's record and trace rows alone;
    the findings and the roles' verdict read its conditions."""
    records = record_rows(run_dir.rows(RECORDS), run_dir.path / RECORDS)
    results = summarize_cuer(records, config)
    return extended(
        results, CuerSummary, findings=pattern_findings(results.conditions),
        roles=roles_summary(records, config, suppressed=no_verdict(results.conditions)),
        ledger=ledger_from_rows(run_dir.rows(TRACES)),
        # every field of the config is written, as given or defaulted
        config=CuerConfig.model_validate(config.model_dump(mode="json")))


def write_cuer_summary(run_dir: RunDir, config: CuerConfig) -> CuerSummary:
    """Write the CUE-R study's `summary.json` (`cuer_summary`); return it as its model."""
    return run_dir.write_model(cuer_summary(run_dir, config))


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _dp(d: DeltaStat | None) -> str:
    return "—" if d is None or d.mean is None else f"{d.mean:+.3f} ({_p(d.p)})"


def cuer_table(summary: CuerSummary, title: str) -> Table:
    """Rows: conditions. Columns: mean correctness, grounding, confidence error and D,
    then Δcorrectness and ΔD with their p-values (Δ > 0: the intervention hurt)."""
    table = Table(title=title)
    for col in ("condition", "n", "correct.", "ground.", "conf. err", "D", "Δcorrect. (p)",
                "Δground. (p)", "D (p)"):
        table.add_column(col, justify="left" if col == "condition" else "right")
    for name, cond in summary.conditions.items():
        d = cond.delta
        deltas = ((None, None, None) if d is None else
                  (d.correctness, d.grounding, d.divergence))
        table.add_row(name, str(cond.n), _fmt(cond.correctness.mean),
                      _fmt(cond.grounding.mean), _fmt(cond.confidence_error.mean),
                      _fmt(cond.divergence.mean), *(_dp(delta) for delta in deltas))
    return table

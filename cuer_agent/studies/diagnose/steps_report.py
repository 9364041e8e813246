"""What `diagnose --format whowhen|agentrx` prints: one row per step diagnoser, per source
and pooled, the controls first."""

from __future__ import annotations

from pathlib import Path

from cuer_agent.studies._common.summary_model import MeanCI
from cuer_agent.studies.diagnose.steps_model import StepScore, StepTracesSummary


def _share(value: MeanCI) -> str:
    if value.mean is None:
        return "—"
    low, high = value.ci or (value.mean, value.mean)
    return f"{value.mean:.3f} [{low:.2f}, {high:.2f}]"


def _row(name: str, score: StepScore) -> str:
    return (f"  {name:<40} {score.n:>4}  {_share(score.step_exact):<20} "
            f"{_share(score.step_within['1']):<20} {_share(score.step_within['3']):<20} "
            f"{_share(score.agent):<20} {_share(score.step_substring)}")


def step_scores_text(summary: StepTracesSummary, out: Path) -> str:
    """The scores as text: per source, then pooled (when there are several sources)."""
    head = (f"  {'diagnoser':<40} {'n':>4}  {'step exact':<20} {'within 1':<20} "
            f"{'within 3':<20} {'agent':<20} substring (reference scorer, not to quote)")
    lines = [f"{summary.logs} logs, {summary.labelled} labelled"
             + (f"; unlabelled: {', '.join(f'{k} ({v})' for k, v in summary.unlabelled.items())}"
                if summary.unlabelled else "")]
    parts = [(f"{name} ({source.indexing})", source.diagnosers)
             for name, source in summary.by_source.items()]
    if len(parts) > 1:
        parts.append(("pooled", {n: d for n, d in summary.diagnosers.items()}))
    for title, scores in parts:
        lines += [title, head, *(_row(name, score) for name, score in scores.items())]
    lines += [f"not run: {name}: {why}" for name, why in summary.not_run.items()]
    lines.append(f"→ {out}")
    return "\n".join(lines)

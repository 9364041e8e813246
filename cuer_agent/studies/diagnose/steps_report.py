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
    if (agreement := summary.agreement) is not None:
        lines.append(f"the two label sets on the {agreement.n} logs both cover: step exact "
                     f"{_share(agreement.step_exact)}, agent {_share(agreement.agent)} "
                     "(the ceiling)")
    lines += [f"not run: {name}: {why}" for name, why in summary.not_run.items()]
    lines.append(f"→ {out}")
    return "\n".join(lines)


def step_report_markdown(summary: StepTracesSummary) -> str:
    """`report.md` of a step diagnose: per source, then pooled, a table of every step
    diagnoser (controls first) — agent, exact step, within ±1 and ±3, n — and what did
    not run."""
    lines = ["# Step diagnosers on labelled failure logs", "",
             f"{summary.logs} logs ({summary.format}, {summary.traces}), "
             f"{summary.labelled} labelled"
             + (f"; unlabelled: {', '.join(f'{k} ({v})' for k, v in summary.unlabelled.items())}"
                if summary.unlabelled else "") + ". Each figure is a share of the labelled "
             "logs with its 95 % interval; a step is right by integer equality in the "
             "source's own indexing. The substring column is what the Who&When reference "
             "scorer would count (label 1, prediction 12: right): not a figure to quote.", ""]
    parts = [(f"{name} ({source.indexing}; {source.labelled} labelled logs)",
              source.diagnosers) for name, source in summary.by_source.items()]
    if len(parts) > 1:
        parts.append(("Pooled", dict(summary.diagnosers)))
    for title, scores in parts:
        lines += [f"## {title}", "",
                  "| diagnoser | n | step exact | within ±1 | within ±3 | agent | substring |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {name} | {s.n} | {_share(s.step_exact)} | {_share(s.step_within['1'])} "
                  f"| {_share(s.step_within['3'])} | {_share(s.agent)} | "
                  f"{_share(s.step_substring)} |" for name, s in scores.items()]
        lines.append("")
    if (agreement := summary.agreement) is not None:
        lines += ["## The ceiling: two label sets on the same logs", "",
                  f"AgentRx's labels against Who&When's on the {agreement.n} logs both cover "
                  f"({agreement.unmatched} unmatched): step exact "
                  f"{_share(agreement.step_exact)}, within ±1 "
                  f"{_share(agreement.step_within['1'])}, within ±3 "
                  f"{_share(agreement.step_within['3'])}, agent {_share(agreement.agent)}. No "
                  "diagnoser can be expected to agree with one label set more than the two "
                  "agree with each other.", ""]
    if summary.not_run:
        lines += ["## Not run", "", *(f"- {name}: {why}" for name, why in summary.not_run.items()),
                  ""]
    return "\n".join(lines)

"""Step diagnosers scored on labelled failure logs (Who&When, AgentRx), done right.

Per source and pooled, each diagnoser's agent accuracy (names compared by `agent_name`),
its exact step accuracy — integer equality in the source's own indexing, never the
Who&When reference scorer's substring test (label 1, prediction 12: "right") — and its
accuracy within ±1, ±2, ±3 steps, each a share of the labelled logs with its interval
and n; beside them, what the substring test would give. A guess is scored by its weight:
a point prediction scores 0 or 1, `chance` the expectation of a uniform step over the
log. An abstention is wrong. The controls `chance`, `first-step`, `last-step` are in
every table.

Written to the output directory: `summary.json` (`StepTracesSummary`), `report.md` (the
benchmark tables), `diagnoses.jsonl` (per log and diagnoser: what it named and why),
`unlabelled.jsonl` (the logs no label could be read or matched for, with the reason),
`ledger.json` (the model calls of this invocation).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuer_agent._json import JsonRow
from cuer_agent.config import StudyConfig
from cuer_agent.diagnosers._step_base import StepDiagnoser, StepPrediction
from cuer_agent.metrics.stats import wilson_interval
from cuer_agent.run_dir import RunDir, canonical_json, write_atomic
from cuer_agent.step_trace import StepTrace
from cuer_agent.studies._common.session import Execution
from cuer_agent.studies._common.summary_model import MeanCI
from cuer_agent.studies.diagnose.steps_model import (
    WITHIN,
    LabelAgreement,
    StepDiagnoserSummary,
    StepScore,
    StepSource,
    StepTracesSummary,
)

INDEXING = {0: "0-based: the first step is 0 (Who&When's mistake_step indexes history)",
            1: "1-based: the first message is step 1 (AgentRx's step_number)"}
"""How a source numbers its steps, by the number of its first step."""
FIGURES = ("agent", "step_exact", *(f"within_{k}" for k in WITHIN), "step_substring")


@dataclass(frozen=True)
class Outcome:
    """One diagnoser on one labelled log: each figure's expected hit (0 or 1 for a point
    guess)."""

    source: str
    hits: dict[str, float]
    abstained: bool


def outcome(trace: StepTrace, prediction: StepPrediction) -> Outcome:
    """How `prediction` scores against `trace`'s labels (which must be present)."""
    labels = trace.labels
    assert labels is not None
    hits = dict.fromkeys(FIGURES, 0.0)
    for guess in prediction.guesses:
        distance = abs(guess.step - labels.step)
        hits["agent"] += guess.weight * (guess.agent == labels.agent)
        hits["step_exact"] += guess.weight * (distance == 0)
        for k in WITHIN:
            hits[f"within_{k}"] += guess.weight * (distance <= k)
        hits["step_substring"] += guess.weight * (str(labels.step) in str(guess.step))
    return Outcome(trace.source, {k: round(v, 12) for k, v in hits.items()},
                   not prediction.guesses)


def share(values: Sequence[float]) -> MeanCI:
    """The mean of per-log hits with its 95 % interval: Wilson for 0/1 hits, else the
    normal interval of the mean (clipped to [0, 1])."""
    n = len(values)
    if not n:
        return MeanCI(mean=None, ci=None)
    mean = sum(values) / n
    if all(v in (0.0, 1.0) for v in values):
        return MeanCI(mean=round(mean, 6), ci=wilson_interval(round(sum(values)), n))
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = 1.959964 * sd / math.sqrt(n)
    return MeanCI(mean=round(mean, 6),
                  ci=(round(max(0.0, mean - half), 6), round(min(1.0, mean + half), 6)))


def score(outcomes: Sequence[Outcome], outside: int = 0) -> StepScore:
    def figure(name: str) -> MeanCI:
        return share([o.hits[name] for o in outcomes])

    return StepScore(n=len(outcomes), agent=figure("agent"), step_exact=figure("step_exact"),
                     step_within={str(k): figure(f"within_{k}") for k in WITHIN},
                     step_substring=figure("step_substring"),
                     abstained=sum(o.abstained for o in outcomes), outside=outside)


def diagnosis_row(trace: StepTrace, name: str, prediction: StepPrediction) -> dict[str, object]:
    """What a diagnoser named on one log: its guess (a spread guess: how many steps it
    spreads over), and why."""
    row: dict[str, object] = {"key": trace.key, "source": trace.source, "diagnoser": name,
                              "why": prediction.why, "applies": prediction.applies}
    if len(prediction.guesses) == 1:
        guess = prediction.guesses[0]
        row |= {"step": guess.step, "agent": guess.agent}
    elif prediction.guesses:
        row["spread_over"] = len(prediction.guesses)
    return row


def _task(text: str) -> str:
    return " ".join(text.casefold().split())


def label_agreement(traces: Sequence[StepTrace], reference: Sequence[StepTrace]
                    ) -> LabelAgreement:
    """`traces`' labels against `reference`'s on the logs both cover: a log is matched by
    its task text (the same, or the reference's task inside it: AgentRx's first message
    may wrap Who&When's question), steps compared as positions in the log."""
    tasks = {_task(r.task): r for r in reference if r.labels is not None and r.task.strip()}
    hits: dict[str, list[float]] = {"exact": [], "agent": [], **{str(k): [] for k in WITHIN}}
    unmatched = 0
    for trace in (t for t in traces if t.labels is not None):
        task = _task(trace.task)
        match = tasks.get(task) or max((r for key, r in tasks.items() if key and key in task),
                                       key=lambda r: len(r.task), default=None)
        if match is None or match.labels is None or trace.labels is None:
            unmatched += 1
            continue
        distance = abs((trace.labels.step - trace.first_step)
                       - (match.labels.step - match.first_step))
        hits["exact"].append(float(distance == 0))
        hits["agent"].append(float(trace.labels.agent == match.labels.agent))
        for k in WITHIN:
            hits[str(k)].append(float(distance <= k))
    return LabelAgreement(n=len(hits["exact"]), step_exact=share(hits["exact"]),
                          step_within={str(k): share(hits[str(k)]) for k in WITHIN},
                          agent=share(hits["agent"]), unmatched=unmatched)


def run_step_diagnose(traces: Sequence[StepTrace], unlabelled: dict[str, str],
                      diagnosers: Iterable[StepDiagnoser], out: Path, *, fmt: str, path: str,
                      labels: str | None, not_run: dict[str, str],
                      agreement: LabelAgreement | None = None) -> StepTracesSummary:
    """Every diagnoser on every log; scored on the labelled ones, per source and pooled."""
    chosen, not_run = list(diagnosers), dict(not_run)
    labelled = [t for t in traces if t.labels is not None]
    rows: list[dict[str, object]] = []
    scored: dict[str, list[Outcome]] = {}
    outside: dict[str, list[str]] = {}  # diagnoser → sources of the labelled logs it skipped
    why_outside: dict[str, str] = {}
    for d in chosen:
        results, skipped = scored.setdefault(d.name, []), outside.setdefault(d.name, [])
        for trace in traces:
            prediction = d.predict(trace)
            rows.append(diagnosis_row(trace, d.name, prediction))
            if trace.labels is None:
                continue
            if prediction.applies:
                results.append(outcome(trace, prediction))
            else:
                skipped.append(trace.source)
                why_outside.setdefault(d.name, prediction.why)
    for d in [d for d in chosen if labelled and not scored[d.name]]:  # in scope of no log
        not_run[d.name] = f"applies to none of these logs ({why_outside[d.name]})"
        chosen.remove(d)
    sources = sorted({t.source for t in traces})
    summary = StepTracesSummary(
        format=fmt, traces=path, labels=labels, logs=len(traces), labelled=len(labelled),
        unlabelled=dict(sorted(Counter(_reason_kind(r) for r in unlabelled.values()).items())),
        diagnosers={d.name: StepDiagnoserSummary(
            control=d.control, reads=d.reads,
            **score(scored[d.name], len(outside[d.name])).model_dump()) for d in chosen},
        by_source={source: StepSource(
            logs=sum(t.source == source for t in traces),
            labelled=sum(t.source == source for t in labelled),
            indexing=INDEXING.get(next(t.first_step for t in traces if t.source == source),
                                  "the source's own numbering"),
            diagnosers={d.name: score([o for o in scored[d.name] if o.source == source],
                                      outside[d.name].count(source))
                        for d in chosen}) for source in sources},
        not_run=not_run, **({"agreement": agreement} if agreement else {}))
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "diagnoses.jsonl", "".join(canonical_json(r) + "\n" for r in rows))
    write_atomic(out / "unlabelled.jsonl", "".join(
        canonical_json({"key": key, "reason": why}) + "\n" for key, why in unlabelled.items()))
    from cuer_agent.studies.diagnose.steps_report import step_report_markdown

    write_atomic(out / "report.md", step_report_markdown(summary))
    return RunDir(out).write_model(summary)


def _reason_kind(reason: str) -> str:
    """A reason without the log's own values (quoted or numbers) and asides: what
    `unlabelled` counts by."""
    return re.sub(r"'[^']*'|\d+", "…", reason.split(" (")[0])


STEP_FORMATS = ("whowhen", "agentrx")
"""The `--format`s whose logs are step traces (and `openinference` files that hold step
logs: `is_step_log_file`)."""


def is_step_source(fmt: str, path: Path) -> bool:
    """Whether `diagnose` reads `path` as step traces."""
    if fmt in STEP_FORMATS:
        return True
    from cuer_agent.interchange.step_spans import is_step_log_file

    return fmt == "openinference" and path.is_file() and is_step_log_file(path)


def read_step_logs(fmt: str, path: Path, labels: Path | None
                   ) -> tuple[list[StepTrace], dict[str, str]]:
    """The logs at `path` in format `fmt` (and `labels`, for AgentRx): every log, and key
    → why for those left unlabelled."""
    from cuer_agent.errors import ConfigError

    if fmt == "whowhen":
        from cuer_agent.interchange.whowhen import read_whowhen

        if labels is not None:
            raise ConfigError("--labels: Who&When's labels are inside its logs; give none")
        return read_whowhen(path)
    if fmt == "openinference":  # step logs written by `write_step_spans`
        from cuer_agent.interchange.step_spans import read_step_spans

        return read_step_spans(path)
    if fmt == "agentrx":
        from cuer_agent.interchange.agentrx import read_agentrx

        if labels is None:
            raise ConfigError("--format agentrx needs --labels: AgentRx keeps its labels "
                              "apart from the trajectories")
        return read_agentrx(path, labels)
    raise ConfigError(f"--format must be one of {', '.join(STEP_FORMATS)}, got {fmt!r}")


DEFAULT_JUDGE = "llm-judge:all_at_once"
"""The step judge a default selection runs on a model backend (the others by name)."""


def diagnose_step_logs(fmt: str, path: Path, labels: Path | None, out: Path,
                       diagnosers: Sequence[str] | None, config: StudyConfig,
                       execution: Execution, reference: Path | None = None
                       ) -> tuple[StepTracesSummary, JsonRow]:
    """`diagnose --traces PATH --format whowhen|agentrx`: read the logs (a broken one is
    one DataError naming it, before anything is written), run the step diagnosers — by
    default the controls, the replays found (catchbench installed) and, on a model
    backend, `llm-judge:all_at_once` — and score them; with `reference` (Who&When logs an
    AgentRx file re-annotates), the two label sets' agreement. (summary, the ledger of
    this invocation's model calls)."""
    from cuer_agent.diagnosers._step_base import get_step_diagnoser, step_diagnoser_names
    from cuer_agent.diagnosers.catchbench_replay import replays_not_run
    from cuer_agent.diagnosers.step_judge import no_step_judge
    from cuer_agent.llm.backends import backend_about
    from cuer_agent.studies._common.session import skill_client

    model = not backend_about(config.backend.name).rule_based
    names = list(diagnosers) if diagnosers else [
        n for n in step_diagnoser_names()
        if not n.startswith("llm-judge") or (model and n == DEFAULT_JUDGE)]
    traces, unlabelled = read_step_logs(fmt, path, labels)  # before any model loads
    agreement = None
    if reference is not None:
        from cuer_agent.errors import ConfigError

        if fmt != "agentrx":
            raise ConfigError("--reference compares AgentRx's labels with Who&When's: it "
                              "goes with --format agentrx")
        agreement = label_agreement(traces, read_step_logs("whowhen", reference, None)[0])
    wants_skills = model and any(n.startswith("llm-judge") for n in names)
    skills = skill_client(config.backend, config.diagnose.seed, execution) \
        if wants_skills else None
    made = [get_step_diagnoser(name, skills=skills) for name in names]
    not_run = {d.name: why for d in made if (why := d.not_run())}
    if not diagnosers:
        not_run |= replays_not_run()
        if not model:
            not_run["llm-judge:*"] = no_step_judge(config.backend.name)
    summary = run_step_diagnose(traces, unlabelled, [d for d in made if d.name not in not_run],
                                out, fmt=fmt, path=str(path),
                                labels=str(labels) if labels else None, not_run=not_run,
                                agreement=agreement)
    from cuer_agent.interchange.step_spans import write_step_spans

    write_step_spans(traces, out / "spans.jsonl")  # the logs as OpenInference, read back alike
    ledger = skills.ledger.to_dict() if skills else {}
    write_atomic(out / "ledger.json", canonical_json(ledger, indent=2) + "\n")
    return summary, ledger

"""The commands that read what exists, run no study: `data stats`, `score`, `export`,
`diagnose` (traces from any agent) and `trace show`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cuer_agent.cli._app import command, data_app, print_json, trace_app
from cuer_agent.cli._options import (
    DATA_FLAGS,
    MODEL_FLAGS,
    CachePath,
    DataFlags,
    ModelFlags,
    NoCache,
    RanHopBudget,
    Seed,
    names,
)
from cuer_agent.cli._study import study_config
from cuer_agent.data import dataset_names, is_generated
from cuer_agent.errors import CuerError
from cuer_agent.metrics.official import official_datasets
from cuer_agent.studies._common.session import Execution


@command("stats", on=data_app)
def data_stats(
    data_flags: DataFlags = DATA_FLAGS,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Example and passage counts, hop histogram, question types, support recall@5.
    (It runs no agent, so it has no --hops.)"""
    from cuer_agent.config import with_question_hops
    from cuer_agent.studies._common.data_stats import dataset_stats
    from cuer_agent.studies._common.session import study_data

    ds = study_data(with_question_hops(study_config(None, data_flags), None).data)
    stats = dataset_stats(ds)
    if as_json:
        print_json(stats)
        return
    table = Table(title=f"{stats['dataset']} ({stats['source']})", show_header=False)
    for key in ("examples", "passages"):
        table.add_row(key, str(stats[key]))
    table.add_row("hops", ", ".join(f"{h}: {c}" for h, c in stats["hops"].items()))
    table.add_row("question types",
                  ", ".join(f"{t}: {c}" for t, c in stats["question_types"].items()))
    if "support_recall_at_5" in stats:
        table.add_row("support recall@5 by hop",
                      ", ".join(f"{h}: {r:.2f}" for h, r in stats["support_recall_at_5"].items()))
    Console().print(table)



@command("score")
def score_cmd(
    dataset: Annotated[str, typer.Option(help=", ".join(official_datasets()) + ".")],
    gold: Annotated[Path, typer.Option(help="Gold file in the dataset's original format.")],
    pred: Annotated[Path, typer.Option(help='Predictions: {"answer": {id: answer}} '
                                       "(MuSiQue also: JSONL of {id, predicted_answer}).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Score any system's predictions exactly as the official evaluators do (+ soft)."""
    from cuer_agent.metrics.official import score_predictions

    scores = score_predictions(dataset, gold, pred)
    if as_json:
        print_json(scores)
        return
    typer.echo(f"n {scores['n']}  em {scores['em']:.4f}  f1 {scores['f1']:.4f}  "
               f"soft {scores['soft']:.4f}  missing {scores['missing']}")


@command("export")
def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (evaluate, propagate, "
                                            "cuer or run).")],
    fmt: Annotated[str, typer.Option("--format", help="openinference (OTLP/JSON lines).")] = (
        "openinference"),
    out: Annotated[Path | None, typer.Option(help="Output file (default "
                                             "<run_dir>/openinference.jsonl).")] = None,
    endpoint: Annotated[str | None, typer.Option(
        help="Also POST the spans to this OTLP/HTTP collector (…/v1/traces is added unless "
             "given), e.g. http://127.0.0.1:4318 or a Langfuse …/api/public/otel.")] = None,
    protobuf: Annotated[bool, typer.Option(
        "--protobuf", help="POST application/x-protobuf instead of JSON (Phoenix); needs "
                           "opentelemetry-proto.")] = False,
) -> None:
    """Write every trace of a run as OpenInference spans (and optionally send them)."""
    from cuer_agent.interchange import export_run, run_requests, send

    if fmt != "openinference":
        raise CuerError(f"--format must be openinference, got {fmt!r}")
    path = out or run_dir / "openinference.jsonl"
    n = export_run(run_dir, path)
    typer.echo(f"{n} traces → {path}")
    if endpoint:
        sent = send(run_requests(run_dir), endpoint, protobuf=protobuf)
        typer.echo(f"{sent} traces → {endpoint}")


@command("diagnose")
def diagnose_cmd(
    traces: Annotated[Path, typer.Option(help="Traces file: OpenInference spans (OTLP/JSON "
                                         "lines, hex or base64 ids) or cuer traces JSONL; "
                                         "or failure logs: a Who&When file or folder, "
                                         "AgentRx trajectories.")],
    out: Annotated[Path, typer.Option(help="Output directory.")],
    fmt: Annotated[str, typer.Option("--format", help="openinference (default), cuer, "
                                     "whowhen or agentrx (failure logs of multi-agent "
                                     "teams: step diagnosers, scored by step and "
                                     "agent).")] = "openinference",
    diagnosers: Annotated[str | None, typer.Option(
        help="Comma-separated diagnosers (default: every trace-only one, and the probes "
             "with --agent). Gold-reading ones need --gold; probing ones need --agent.")] = None,
    gold: Annotated[Path | None, typer.Option(help="Gold file in the dataset's original "
                                              "format (matched by example id, then "
                                              "question).")] = None,
    dataset: Annotated[str | None, typer.Option(
        help="The gold file's dataset: " + ", ".join(
            name for name in dataset_names() if not is_generated(name)) + ".")] = None,
    retrieval_tools: Annotated[str | None, typer.Option(
        help="Comma-separated names of TOOL spans that are searches (a ReAct agent's search "
             "tool): each call is a hop, its output text the evidence.")] = None,
    llm: ModelFlags = MODEL_FLAGS,
    seed: Seed = None,
    hop_budget: RanHopBudget = None,
    labels: Annotated[Path | None, typer.Option(
        help="Labels JSONL (docs/schemas/labels.schema.json): per trace its outcome and, "
             "when it failed, the first-error hop and stage. Scores the diagnosers "
             "(exact-hop and stage accuracy, coverage, clean blame, controls). With "
             "--format agentrx: AgentRx's labels (JSON).")] = None,
    reference: Annotated[Path | None, typer.Option(
        help="With --format agentrx: the Who&When logs AgentRx's labels re-annotate; "
             "the two label sets' agreement is reported (the ceiling of any "
             "diagnoser).")] = None,
    agent: Annotated[str | None, typer.Option(
        help="The agent that ran the traces (module:factory; cuer-agent's own: "
             "cuer_agent.graphs.agent:build): the probes frozen-hop and suffix-regen "
             "re-execute it on each labelled failure with the repairs it allows. Needs "
             "--gold and --dataset (the data the traces ran on) and --hops.")] = None,
    cache: CachePath = None,
    no_cache: NoCache = False,
) -> None:
    """Diagnose traces from any agent: trace-only diagnosers, gold ones with --gold;
    scored against your labels with --labels. The model flags (--backend ...) are
    llm-judge's."""
    from cuer_agent.studies import entry
    from cuer_agent.studies.diagnose.steps_model import StepTracesSummary
    from cuer_agent.studies.diagnose.steps_report import step_scores_text
    from cuer_agent.studies.diagnose.traces_report import scores_line

    if (gold is None) != (dataset is None):
        raise CuerError("--gold and --dataset go together")
    if agent is not None and gold is None:
        raise CuerError("--agent re-executes the traces' agent on their examples: give the "
                        "data file they ran on (--gold FILE --dataset NAME)")
    source = entry.TraceSource(path=traces, format=fmt,
                               retrieval_tools=names(retrieval_tools or ""),
                               hop_budget=hop_budget, gold=gold, dataset=dataset,
                               labels=labels, reference=reference, agent=agent)
    study = study_config(None, llm, diagnose={"seed": seed})
    done = entry.diagnose(source, out=out, config=study,
                          diagnosers=names(diagnosers) if diagnosers else None,
                          execution=Execution(cache=cache, use_cache=not no_cache))
    for note in done.notes:
        typer.echo(note)
    summary = done.summary
    if isinstance(summary, StepTracesSummary):
        typer.echo(step_scores_text(summary, out))
        return
    typer.echo(f"{summary.mapped}/{summary.traces} traces mapped, "
               f"{summary.unmapped_spans.n} spans left out; "
               f"{len(summary.diagnosers)} diagnosers → {out}")
    if labels is not None or gold is not None:
        typer.echo(scores_line(summary))


@command("show", on=trace_app)
def trace_show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    example: Annotated[str, typer.Option(help="Example id.")],
) -> None:
    """Render one trace as a tree."""
    from rich.tree import Tree

    from cuer_agent.run_dir import read_rows
    from cuer_agent.trace import Trace

    path = run_dir / "traces.jsonl"
    if not path.exists():
        raise CuerError(f"{path}: no such file")
    for row in read_rows(path):
        trace = Trace.model_validate(row["trace"])
        if trace.example_id == example:
            break
    else:
        raise CuerError(f"{path}: no trace for example {example!r}")
    root = Tree(f"[bold]{trace.question}[/]  ({trace.mode}, status {trace.status})")
    for hop in trace.hops:
        node = root.add(f"hop {hop.hop}" + (f" ({len(hop.attempts) + 1} attempts)"
                                           if hop.attempts else ""))
        for attempt in (*hop.attempts, hop):
            _render_attempt(node if not hop.attempts else
                            node.add(f"attempt {attempt.attempt}"), attempt)
    root.add(f"answer: [bold green]{trace.answer or '—'}[/]  confidence: {trace.confidence}  "
             f"used: {', '.join(trace.used_ids) or '—'}")
    root.add(f"cost: {trace.cost.llm_calls} skill calls, "
             f"{trace.cost.prompt_tokens + trace.cost.completion_tokens} tokens")
    Console().print(root)


def _render_attempt(node: Any, attempt: Any) -> None:
    """One attempt of a hop: its sub-query, evidence (✓ = selected), finding, support."""
    node.add(f"sub-query: [cyan]{attempt.subquery}[/]")
    for ev in attempt.retrieved:
        mark = "[green]✓[/]" if ev.id in attempt.selected else " "
        node.add(f"{mark} {ev.rank}. {ev.title} [dim]({ev.id}, {ev.score:.2f})[/]")
    node.add(f"finding: [magenta]{attempt.finding or '—'}[/]  support: {attempt.support}  "
             f"confidence: {attempt.confidence}")


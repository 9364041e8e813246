"""`cuer-agent run`: run a system over a data set, write traces.jsonl and summary.json.

Rows are appended and flushed one example at a time; the same command again resumes
after the last complete row. A failing server marks that example `error` (with the
reason) and the run goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.progress import Progress

from cuer_agent.data import Dataset, Example
from cuer_agent.execution import Executor
from cuer_agent.metrics import answer_scores
from cuer_agent.parallel import ordered_map
from cuer_agent.retrieval import BM25Retriever, Retriever
from cuer_agent.runs import RunDir
from cuer_agent.trace import Trace

TRACES = "traces.jsonl"


def retriever_factory(dataset: Dataset, *, engine: str = "bm25s") -> Callable[[Example], Retriever]:
    """Per-example pool (distractor setting), or one index over a shared corpus."""
    if dataset.corpus is not None:
        shared = BM25Retriever.from_passages(dataset.corpus, engine=engine)
        return lambda _example: shared
    return lambda example: BM25Retriever.from_passages(example.passages, engine=engine)


def run_dataset(dataset: Dataset, executor: Executor, run_dir: RunDir, *,
                engine: str = "bm25s", show_progress: bool = True,
                concurrency: int = 1) -> dict[str, Any]:
    done = {row["trace"]["example_id"] for row in run_dir.rows(TRACES)}
    todo = [ex for ex in dataset.examples if ex.id not in done]
    retriever_for = retriever_factory(dataset, engine=engine) if todo else None
    with Progress(disable=not show_progress, transient=True) as progress:
        task = progress.add_task("examples", total=len(dataset.examples), completed=len(done))
        def run_one(example: Example) -> Any:
            assert retriever_for is not None
            return executor.run(example, retriever_for(example))

        for result in ordered_map(run_one, todo, concurrency):
            run_dir.append(TRACES, {"trace": result.trace.model_dump(mode="json"),
                                    "request_keys": result.request_keys,
                                    "spent": result.spent})
            progress.advance(task)
    rows = run_dir.rows(TRACES)
    summary = summarize(dataset, rows)
    summary["mode"] = executor.config.mode
    run_dir.write_summary(summary)
    return summary


def summarize(dataset: Dataset, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, hops used, outcomes and the ledger, from the rows alone (deterministic:
    the same rows give the same bytes, however many invocations wrote them)."""
    gold = {ex.id: ex for ex in dataset.examples}
    traces = [Trace.model_validate(row["trace"]) for row in rows
              if row["trace"]["example_id"] in gold]
    scores = [answer_scores(t.answer, gold[t.example_id].gold_answers) for t in traces]
    n = len(traces)

    def mean(key: str) -> float:
        return round(sum(s[key] for s in scores) / n, 6) if n else 0.0

    by_gold_hops: dict[int, list[float]] = {}
    for t, s in zip(traces, scores, strict=True):
        by_gold_hops.setdefault(gold[t.example_id].n_hops, []).append(s["soft"])
    return {
        "dataset": dataset.name,
        "n": n,
        "accuracy": {"soft": mean("soft"), "em": mean("em"), "f1": mean("f1")},
        "accuracy_by_gold_hops": {str(h): {"n": len(v), "soft": round(sum(v) / len(v), 6)}
                                  for h, v in sorted(by_gold_hops.items())},
        "hops_used": {str(h): c for h, c in sorted(Counter(len(t.hops) for t in traces).items())},
        "status": dict(sorted(Counter(t.status for t in traces).items())),
        "errors": [{"example_id": t.example_id, "error": t.error} for t in traces if t.error],
        "ledger": ledger_from_rows(rows),
    }


def ledger_from_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Skill requests, distinct requests (what a cold cache costs), repeats, parse
    failures and tokens of a run — from its trace rows, so resuming changes nothing."""
    keys = [k for row in rows for k in row.get("request_keys", [])]
    spent = [row["spent"] for row in rows if "spent" in row]
    parse_failures = sum(s.get("parse_failures", 0) for s in spent)
    prompt = sum(s.get("prompt_tokens", 0) for s in spent)
    completion = sum(s.get("completion_tokens", 0) for s in spent)
    requests = len(keys)
    return {
        "requests": requests,
        "calls": len(set(keys)),
        "cache_hits": requests - len(set(keys)),
        "parse_failures": parse_failures,
        "parse_failure_rate": round(parse_failures / requests, 6) if requests else 0.0,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
    }

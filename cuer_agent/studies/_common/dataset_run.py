"""`cuer-agent run`: run a system over a data set, write traces.jsonl and summary.json.

Rows are appended and flushed one example at a time; the same command again resumes
after the last complete row. A failing server marks that example `error` (with the
reason) and the run goes on.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired

from pydantic import TypeAdapter
from rich.progress import Progress
from typing_extensions import TypedDict  # typing's has no pydantic schema on 3.11

from cuer_agent._json import JsonRow
from cuer_agent.data import Dataset, Example, Passage
from cuer_agent.execution import Executor, Mode, RunResult, Spent
from cuer_agent.llm.cache import Ledger
from cuer_agent.metrics import answer_scores
from cuer_agent.parallel import Parallelism, ordered_map
from cuer_agent.retrieval import BM25Retriever, Retriever
from cuer_agent.run_dir import RunDir, example_of, request_failed
from cuer_agent.studies._common.summary_model import (
    Accuracy,
    GoldHopsAccuracy,
    RunError,
    RunSummary,
    SkillSpend,
)
from cuer_agent.studies._common.summary_model import Ledger as RunLedger
from cuer_agent.trace import Trace

TRACES = "traces.jsonl"


class TraceRow(TypedDict):
    """A row of `traces.jsonl`: one example through the system."""

    trace: JsonRow
    """The `Trace`, as JSON."""
    request_keys: list[str]
    """The skill requests it made (cache keys)."""
    spent: Spent
    """What this invocation spent on it (`RunResult.spent`)."""


class _Corpus(TypedDict):
    """What a `RetrieverFactory` pickles as."""

    corpus: list[Passage] | None
    engine: str


class RetrieverFactory:
    """The retriever of an example: its own pool (distractor setting), or one index over a
    shared corpus. Pickles as the corpus: a worker process builds the shared index once,
    on first use, instead of receiving it."""

    def __init__(self, corpus: list[Passage] | None, engine: str = "bm25s") -> None:
        self.corpus, self.engine = corpus, engine
        self._shared: BM25Retriever | None = None
        self._lock = threading.Lock()

    def __call__(self, example: Example) -> BM25Retriever:
        if self.corpus is None:
            return BM25Retriever.from_passages(example.passages, engine=self.engine)
        with self._lock:  # one build, however many threads ask at once
            if self._shared is None:
                self._shared = BM25Retriever.from_passages(self.corpus, engine=self.engine)
        return self._shared

    def __getstate__(self) -> _Corpus:
        return {"corpus": self.corpus, "engine": self.engine}

    def __setstate__(self, state: _Corpus) -> None:
        self.__init__(**state)  # type: ignore[misc]


def retriever_factory(dataset: Dataset, *, engine: str = "bm25s") -> RetrieverFactory:
    return RetrieverFactory(dataset.corpus, engine=engine)


@dataclass(frozen=True)
class RunTask:
    """One example through the system, as a trace row (picklable, for worker processes)."""

    executor: Executor
    retriever_for: Callable[[Example], Retriever]

    @property
    def ledger(self) -> Ledger:
        return self.executor.skills.ledger

    def __call__(self, example: Example) -> TraceRow:
        return trace_fields(self.executor.run(example, self.retriever_for(example)))


def trace_fields(result: RunResult) -> TraceRow:
    """A run as a row of `traces.jsonl` holds it (every study's; a study adds its
    intervention record)."""
    return {"trace": result.trace.model_dump(mode="json"),
            "request_keys": result.request_keys, "spent": result.spent}


def run_dataset(dataset: Dataset, executor: Executor, run_dir: RunDir, *,
                engine: str = "bm25s", show_progress: bool = True,
                parallel: Parallelism | int = 1) -> RunSummary:
    """Run every example not yet done into `run_dir`'s trace rows, write `summary.json`
    and return it as its model."""
    rows = run_dir.rows(TRACES)
    failed = request_failed(rows)  # the server's failure, not the agent's: redone
    done = {example_of(row) for row in rows} - failed
    run_dir.keep_examples(TRACES, done, rows)
    todo = [ex for ex in dataset.examples if ex.id not in done]
    task = RunTask(executor, retriever_factory(dataset, engine=engine))
    with Progress(disable=not show_progress, transient=True) as progress:
        bar = progress.add_task("examples", total=len(dataset.examples), completed=len(done))
        for row in ordered_map(task, todo, parallel):
            run_dir.append(TRACES, row)
            progress.advance(bar)
    run_dir.restore_data_order((TRACES,), [ex.id for ex in dataset.examples], done)
    return run_dir.write_model(summarize(dataset, run_dir.rows(TRACES), executor.spec.mode))


def summarize(dataset: Dataset, rows: Sequence[JsonRow], mode: Mode) -> RunSummary:
    """Accuracy, hops used, outcomes and the ledger of the system that ran in `mode`,
    from the rows alone (deterministic: the same rows give the same bytes, however many
    invocations wrote them)."""
    gold = {ex.id: ex for ex in dataset.examples}
    traces = [Trace.model_validate(trace) for row in rows
              if isinstance(trace := row["trace"], Mapping) and trace["example_id"] in gold]
    scores = [answer_scores(t.answer, gold[t.example_id].gold_answers) for t in traces]
    n = len(traces)

    def mean(key: str) -> float:
        return round(sum(s[key] for s in scores) / n, 6) if n else 0.0

    by_gold_hops: dict[int, list[float]] = {}
    for t, s in zip(traces, scores, strict=True):
        by_gold_hops.setdefault(gold[t.example_id].n_hops, []).append(s["soft"])
    return RunSummary(
        dataset=dataset.name, mode=mode, n=n,
        accuracy=Accuracy(soft=mean("soft"), em=mean("em"), f1=mean("f1")),
        accuracy_by_gold_hops={str(h): GoldHopsAccuracy(n=len(v), soft=round(sum(v) / len(v), 6))
                               for h, v in sorted(by_gold_hops.items())},
        hops_used={str(h): c for h, c in sorted(Counter(len(t.hops) for t in traces).items())},
        status=dict(sorted(Counter(t.status for t in traces).items())),
        errors=[RunError(example_id=t.example_id, error=t.error) for t in traces if t.error],
        ledger=ledger_from_rows(rows))


class _Status(TypedDict):
    status: NotRequired[str]


class _Spent(TypedDict):
    parse_failures: NotRequired[int]
    prompt_tokens: NotRequired[int]
    completion_tokens: NotRequired[int]
    retries: NotRequired[int]
    by_skill: NotRequired[dict[str, dict[str, int]]]


class _SpendingRow(TypedDict):
    """What the ledger reads of a trace row (any study's; a row may lack a part)."""

    request_keys: NotRequired[list[str]]
    trace: NotRequired[_Status | None]
    spent: NotRequired[_Spent]


_SPENDING_ROWS = TypeAdapter(list[_SpendingRow])
_BY_SKILL = TypeAdapter(dict[str, dict[str, int]])


def ledger_from_rows(rows: Sequence[JsonRow]) -> RunLedger:
    """Skill requests, distinct requests (what a cold cache costs), repeats, parse
    failures, traces cut short by a failed request (`errors`: the server never answered
    after all retries), the retries behind the replies used (and behind failed
    requests), and tokens of a run — from its trace rows, so resuming changes nothing."""
    rows_read = _SPENDING_ROWS.validate_python(rows)
    keys = [k for row in rows_read for k in row.get("request_keys", [])]
    errors = sum(1 for row in rows_read
                 if (trace := row.get("trace")) is not None and trace.get("status") == "error")
    spent = [row["spent"] for row in rows_read if "spent" in row]
    parse_failures = sum(s.get("parse_failures", 0) for s in spent)
    prompt = sum(s.get("prompt_tokens", 0) for s in spent)
    completion = sum(s.get("completion_tokens", 0) for s in spent)
    retries = sum(s.get("retries", 0) for s in spent)
    requests = len(keys)
    return RunLedger(
        requests=requests, calls=len(set(keys)), cache_hits=requests - len(set(keys)),
        parse_failures=parse_failures,
        parse_failure_rate=round(parse_failures / requests, 6) if requests else 0.0,
        errors=errors, retries=retries, prompt_tokens=prompt, completion_tokens=completion,
        tokens=prompt + completion, by_skill=skill_spend(spent))


def skill_spend(spent: Iterable[Mapping[str, object]]) -> dict[str, SkillSpend]:
    """The per-skill counters (`by_skill`) of trace rows' `spent` or of diagnosis rows,
    summed, with the rates they imply (a part without `by_skill` adds nothing)."""
    totals: dict[str, Counter[str]] = {}
    for s in spent:
        for skill, counts in _BY_SKILL.validate_python(s.get("by_skill", {})).items():
            totals.setdefault(skill, Counter()).update(counts)
    out = {}
    for skill, c in sorted(totals.items()):
        n = c["requests"]
        out[skill] = SkillSpend(
            requests=n, parse_failures=c["parse_failures"],
            parse_failure_rate=round(c["parse_failures"] / n, 6) if n else 0.0,
            cut=c["cut"], repaired=c["repaired"], completion_tokens=c["completion_tokens"],
            mean_completion_tokens=round(c["completion_tokens"] / n, 3) if n else 0.0)
    return out

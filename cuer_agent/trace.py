"""The observable trace: everything a running system exposed, and nothing else.

Every metric and every diagnoser in cuer-agent works from traces. A trace holds only
*observable* fields: sub-queries, retrieved evidence (id, title, text, rank, score),
selected ids, support status, findings, the final answer, self-reported confidence,
the ids the answer says it used, a rationale, and cost counts.

*Hidden labels* — gold answers, gold supporting titles, which intervention was applied
where, tampering certificates — never live here. They stay on the
`cuer_agent.data.Example` and on intervention records, which are stored *next to* a
trace in a run directory, never inside it.

Vocabulary:

* **step** — one `(state, action)` pair; `action` is one of PLAN, RETRIEVE, SELECT,
  VERIFY, INFER, ANSWER. `state` is the state *after* the action.
* **hop** — one retrieve-read cycle of the agent, numbered from 1. A hop record
  summarises the hop: sub-query, retrieved evidence, selected ids, finding, support,
  confidence. Steps carry their hop number; the final ANSWER step has hop 0.
* **attempt** — when VERIFY finds a hop unsupported (or nothing selected), the agent may
  retry the hop with a reformulated sub-query. Steps carry their attempt number (1 for
  the first); a hop record is the hop's *last* attempt and keeps the earlier ones, oldest
  first, in `attempts`, so every attempt stays observable.
* Single-shot traces are the degenerate case RETRIEVE → SELECT → ANSWER with one hop.

Traces are JSON-native (a checkpoint round-trip keeps dicts, lists, str, numbers only)
and serialise to one JSON object per line. `SCHEMA_VERSION` changes whenever a field
changes meaning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypedDict

from cuer_agent.errors import DataError

SCHEMA_VERSION = 3
"""3: evidence ids hash the paragraph with the title (no place, no count); hops record
the `windows` a model was shown."""


class Action(StrEnum):
    PLAN = "PLAN"
    RETRIEVE = "RETRIEVE"
    SELECT = "SELECT"
    VERIFY = "VERIFY"
    INFER = "INFER"
    ANSWER = "ANSWER"


Support = Literal["supported", "partial", "unsupported", "unknown"]
"""Verification outcome of a hop: does the selected evidence support the finding?"""


def evidence_id(title: str, paragraph: int, chunk: int = 0) -> str:
    """Stable evidence id from (source title, paragraph index, chunk index):
    `<sha1(title, paragraph)[:12]>-c<chunk>`.

    Never derived from list position, so the same passage has the same id in every run
    and every intervention. The paragraph is hashed with its title, so an id tells neither
    where its paragraph stands in the article nor how many paragraphs the article has: a
    passage a fault adds gets an id of the same form, and nothing in it says it is the
    newest of its title. The chunk number stays readable (every chunk of a paragraph
    shares the id's first part: `paragraph_key`)."""
    digest = hashlib.sha1(f"{title}\x1f{paragraph}".encode()).hexdigest()[:12]
    return f"{digest}-c{chunk}"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Evidence(_Frozen):
    """One retrieved evidence item as the system saw it."""

    id: str
    """Stable id, see `evidence_id`. Injected items get ids of their own."""
    title: str
    text: str
    rank: int = 0
    """1-based rank in the retrieval result it came from (0 = not ranked)."""
    score: float = 0.0
    """Retriever score (BM25); 0.0 when not scored."""


class StepState(_Frozen):
    """The state tuple recorded after each action."""

    query: str = ""
    """Active (sub-)query."""
    in_view: tuple[str, ...] = ()
    """Evidence ids the system could see at this point."""
    selected: tuple[str, ...] = ()
    """Evidence ids selected as relevant so far in this hop."""
    support: Support = "unknown"
    candidate: str = ""
    """Candidate answer or intermediate finding."""
    confidence: float | None = None
    """Step confidence in [0, 1], when the system reports one."""


class Step(_Frozen):
    action: Action
    hop: int
    """Hop number (1-based); 0 for the final ANSWER step."""
    attempt: int = 1
    """Attempt of the hop this step belongs to (1 = first; a retry counts up)."""
    state: StepState = StepState()
    note: str = ""
    """Free text the system exposed for this step (e.g. a planner's reason)."""


def attempt_failed(support: str, selected: Iterable[str]) -> bool:
    """An attempt at a hop failed VERIFY when it is unsupported or selected nothing: what
    makes the agent retry the hop."""
    return support == "unsupported" or not tuple(selected)


class HopAttempt(_Frozen):
    """One attempt at a hop: what was asked, seen, selected and found."""

    hop: int
    attempt: int = 1
    """1 for the hop's first attempt; retries count up."""
    subquery: str
    retrieved: tuple[Evidence, ...] = ()
    selected: tuple[str, ...] = ()
    finding: str = ""
    """Intermediate finding: a bridge entity or partial answer."""
    support: Support = "unknown"
    confidence: float | None = None
    reason: str = ""
    """The reader's stated reason for its finding (the extractive reader quotes the
    sentence it drew from)."""
    windows: dict[str, tuple[int, int]] = Field(default_factory=dict)
    """Items the model was shown only a window of, by id: [first word, word after the
    last] in `text.split()` (`cuer_agent.llm.windows`); empty when it saw every item
    whole."""

    @property
    def failed(self) -> bool:
        """VERIFY's verdict that the attempt found nothing usable (`attempt_failed`)."""
        return attempt_failed(self.support, self.selected)


class HopRecord(HopAttempt):
    """Summary of one hop: its last attempt, with the earlier ones kept."""

    attempts: tuple[HopAttempt, ...] = ()
    """Earlier (failed) attempts of this hop, oldest first; empty if the first attempt
    stood."""

    def first_attempt(self) -> HopAttempt:
        """The hop's first attempt (itself when it never retried)."""
        return self.attempts[0] if self.attempts else self


class Cost(_Frozen):
    """What the run asked of the model: skill calls and their tokens.

    Counts only, and the same whether a reply came from the server or the response
    cache (a cached reply keeps its token counts): wall-clock latency and cache hits live
    in the run ledger, so traces stay comparable byte for byte across runs.
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Trace(_Frozen):
    """The observable record of one run of a system on one question."""

    schema_version: int = SCHEMA_VERSION
    example_id: str
    question: str
    mode: Literal["agentic", "single_shot"] = "agentic"
    steps: tuple[Step, ...] = ()
    hops: tuple[HopRecord, ...] = ()
    answer: str = ""
    confidence: float | None = None
    used_ids: tuple[str, ...] = ()
    """Evidence ids the answer says it used."""
    rationale: str = ""
    cost: Cost = Cost()
    status: Literal["ok", "parse_failure", "error"] = "ok"
    """`parse_failure`: a model reply stayed invalid after the repair retry;
    `error`: the run failed (the reason is in `error`)."""
    error: str = ""
    meta: dict[str, object] = Field(default_factory=dict)
    """Observable run facts (backend, model, hop budget…). Never labels."""

    @property
    def actions(self) -> list[str]:
        return [s.action.value for s in self.steps]

    def evidence_by_id(self) -> dict[str, Evidence]:
        """Every evidence item seen in any hop, first sighting wins."""
        seen: dict[str, Evidence] = {}
        for hop in self.hops:
            for attempt in (*hop.attempts, hop):
                for ev in attempt.retrieved:
                    seen.setdefault(ev.id, ev)
        return seen

    def used_titles(self) -> list[str]:
        """Titles of the evidence the answer says it used ("" for an id never seen)."""
        seen = self.evidence_by_id()
        return [seen[u].title if u in seen else "" for u in self.used_ids]

    def to_json(self) -> str:
        """One canonical JSON line: sorted keys, no whitespace, UTF-8 kept as is."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Trace:
        return cls.model_validate_json(line)


# --- the JSON forms: how a LangGraph state and a user's agent hold the models ------------------

class EvidenceData(TypedDict):
    """`Evidence` as JSON (`Evidence.model_dump(mode="json")`)."""

    id: str
    title: str
    text: str
    rank: NotRequired[int]
    score: NotRequired[float]


class StepStateData(TypedDict, total=False):
    """`StepState` as JSON."""

    query: str
    in_view: list[str]
    selected: list[str]
    support: Support
    candidate: str
    confidence: float | None


class StepData(TypedDict):
    """`Step` as JSON."""

    action: str
    hop: int
    attempt: NotRequired[int]
    state: NotRequired[StepStateData]
    note: NotRequired[str]


class HopData(TypedDict):
    """`HopRecord` (or `HopAttempt`, without `attempts`) as JSON."""

    hop: int
    subquery: str
    attempt: NotRequired[int]
    retrieved: NotRequired[list[EvidenceData]]
    selected: NotRequired[list[str]]
    finding: NotRequired[str]
    support: NotRequired[Support]
    confidence: NotRequired[float | None]
    reason: NotRequired[str]
    windows: NotRequired[dict[str, list[int]]]
    attempts: NotRequired[list[HopData]]


class AnswerData(TypedDict, total=False):
    """An agent's final answer as JSON: the observable fields of an `AnswerResponse`."""

    answer: str
    confidence: float | None
    used_ids: list[str]
    rationale: str


class CostData(TypedDict):
    """`Cost` as JSON."""

    llm_calls: int
    prompt_tokens: int
    completion_tokens: int


class TraceState(TypedDict, total=False):
    """What `build_trace` reads of an agent's state (our graphs' `AgentState` has it)."""

    example_id: str
    question: str
    trace: list[StepData]
    hops: list[HopData]
    final: AnswerData
    cost: CostData
    parse_failures: int


def build_trace(state: TraceState, mode: Literal["agentic", "single_shot"],
                meta: Mapping[str, object], *, error: str = "") -> Trace:
    """The observable trace of an agent's (possibly partial) final state: the graphs'
    JSON-native state (`cuer_agent.graphs.state.AgentState`), validated into the models."""
    final = state.get("final") or {}
    if error:
        status = "error"
    elif state.get("parse_failures"):
        status = "parse_failure"
    else:
        status = "ok"
    return Trace(
        example_id=state["example_id"], question=state["question"], mode=mode,
        steps=tuple(Step.model_validate(s) for s in state.get("trace", [])),
        hops=tuple(HopRecord.model_validate(h) for h in state.get("hops", [])),
        answer=final.get("answer", ""), confidence=final.get("confidence"),
        used_ids=tuple(final.get("used_ids", [])), rationale=final.get("rationale", ""),
        cost=Cost(**state.get("cost", {})), status=status, error=error, meta=dict(meta),
    )


def write_traces(path: str | Path, traces: Iterable[Trace], *, append: bool = False) -> int:
    """Write traces as JSONL (one per line, flushed per line). Returns the count."""
    n = 0
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        for trace in traces:
            fh.write(trace.to_json() + "\n")
            fh.flush()
            n += 1
    return n


def iter_traces(path: str | Path) -> Iterator[Trace]:
    """Read a traces JSONL file; a bad line raises `DataError` naming file and line."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield Trace.from_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"]) or "<root>"
                raise DataError(path, f"not a valid trace ({loc}: {first['msg']})",
                                line=lineno) from None


def read_traces(path: str | Path) -> list[Trace]:
    return list(iter_traces(path))

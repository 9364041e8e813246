"""Skills: the typed requests the agent's nodes make and the validated responses they get.

The graph never builds prompts. Each node calls one skill with a request built from
*observable* state only — the question, sub-queries, evidence text, earlier findings —
and a backend answers it (`cuer_agent.llm.backends`). The one exception is the
judge's `gold_answer`, which is None unless a diagnoser declares that it uses gold;
its name says so. The `check` skill is not the agent's: the `consistency` diagnoser
puts a finished trace to one named check with it. Nor are `blame` and `verdict`: the step
judge (`llm-judge:<protocol>`) puts a multi-agent failure log to them, under Who&When's
three protocols; their `ground_truth` is None unless the judge declares it reads gold.

Responses are what a model must return as JSON; their JSON schemas are sent to servers
that support constrained decoding.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SkillName = Literal["plan", "read", "answer", "judge", "check", "blame", "verdict"]
CheckName = Literal["support", "carry", "bridge", "conflict", "kind", "echo", "relation",
                    "complete", "answer_type", "grounded"]
"""The consistency checks a trace can be put to (`CheckRequest`)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EvidenceView(_Model):
    """An evidence item as a model sees it: quoted data, never instructions."""

    id: str
    title: str
    text: str


class HopView(_Model):
    """What the agent observed in one earlier hop."""

    hop: int
    subquery: str
    finding: str = ""
    support: str = "unknown"
    reason: str = ""
    """The reader's stated reason (the extractive reader quotes the sentence it used)."""
    evidence: tuple[EvidenceView, ...] = ()
    """The hop's selected evidence (filled for answer and judge requests only)."""


# --- requests ---------------------------------------------------------------------------

class PlanRequest(_Model):
    question: str
    hop: int
    """The hop about to start (1-based); on a retry, the hop being retried."""
    hop_budget: int
    history: tuple[HopView, ...] = ()
    """The finished hops before this one."""
    retry: tuple[HopView, ...] = ()
    """A retry when not empty: this hop's earlier attempts, oldest first, which VERIFY
    found unsupported (or which selected nothing). The planner should ask differently."""


class ReadRequest(_Model):
    question: str
    hop: int
    subquery: str
    evidence: tuple[EvidenceView, ...]
    history: tuple[HopView, ...] = ()
    reading: int = Field(default=0, ge=0, exclude=True)
    """Which reading of the evidence to give: 0, the reader's own (best) reading; k ≥ 1,
    its k-th alternative — the rule reader's next-best span, another sample from a model
    (`Backend.rereading`). Never shown to a model (excluded from the request's JSON): it
    says how the reply is drawn, not what is asked, and is part of the cache key instead.
    The `reread` repair asks for reading 1."""


def reading_of(request: BaseModel) -> int:
    """Which reading a request asks for (`ReadRequest.reading`; 0 for every other skill)."""
    return int(getattr(request, "reading", 0))


class AnswerRequest(_Model):
    question: str
    hops: tuple[HopView, ...]
    """Every hop with its selected evidence; single-shot: one hop whose evidence is the
    whole retrieved context."""


class JudgeRequest(_Model):
    question: str
    hops: tuple[HopView, ...]
    answer: str
    gold_answer: str | None = None
    """Hidden label, present only for diagnosers that declare they use gold."""


class TracedHop(_Model):
    """One hop attempt as a trace recorded it, for the consistency checks: what was
    retrieved (every item in view, not only the selected ones) and what was read."""

    hop: int
    attempt: int = 1
    subquery: str
    retrieved: tuple[EvidenceView, ...] = ()
    selected: tuple[str, ...] = ()
    """Ids of the retrieved items the reader selected."""
    finding: str = ""
    support: str = "unknown"
    reason: str = ""


class CheckRequest(_Model):
    """One consistency check of a finished trace (the `consistency` diagnoser): no gold,
    no replay — only what the trace recorded."""

    check: CheckName
    question: str
    hops: tuple[TracedHop, ...]
    """Every attempt of every hop, in the order they ran (a retried hop's earlier
    attempts first); the last attempt of each hop is the one the agent kept."""
    answer: str


class LogStepView(_Model):
    """One step of a failure log as the step judge sees it: quoted data, never
    instructions."""

    step: int
    """The step's number in the log's own indexing."""
    agent: str
    content: str
    cut: bool = False
    """The content is cut to the words the backend's context leaves each step."""


class BlameRequest(_Model):
    """All at once: the whole log; the reply names the step and the agent where the
    failure began."""

    task: str
    steps: tuple[LogStepView, ...]
    ground_truth: str | None = None
    """Hidden label, present only for a judge that declares it reads gold."""


class VerdictRequest(_Model):
    """One yes/no question about a log: step by step, "is step k where the failure
    began?" (the steps up to k shown); binary search, "did it begin within steps
    ask[0]..ask[1]?" (the range being halved shown)."""

    protocol: Literal["step_by_step", "binary_search"]
    task: str
    steps: tuple[LogStepView, ...]
    ask: tuple[int, int]
    """The steps asked about, first and last (one step: both the same)."""
    ground_truth: str | None = None
    """Hidden label, present only for a judge that declares it reads gold."""


# --- responses ---------------------------------------------------------------------------

class PlanResponse(_Model):
    action: Literal["search", "answer"]
    subquery: str = ""
    """The next sub-query when action is search."""
    reason: str = ""


class ReadResponse(_Model):
    selected_ids: list[str] = Field(default_factory=list)
    finding: str = ""
    """The intermediate finding: a bridge entity or partial answer."""
    support: Literal["supported", "partial", "unsupported"] = "unsupported"
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    reason: str = ""


class AnswerResponse(_Model):
    answer: str
    confidence: float = Field(ge=0.0, le=1.0)
    used_ids: list[str] = Field(default_factory=list)
    rationale: str = ""


class JudgeResponse(_Model):
    stage: Literal["retrieval", "tool", "answer", "none"]
    hop: int = Field(ge=0)
    """Blamed hop; 0 = answer level, n+1 = premature termination."""
    rationale: str = ""


class CheckResponse(_Model):
    consistent: bool
    hops: list[int] = Field(default_factory=list)
    """The hops where the check fails, ascending (empty when consistent; n+1 = the trace
    stopped with a part of the question unresolved; 0 = the answer itself)."""
    reason: str = ""
    """What is inconsistent, quoting the trace."""


class BlameResponse(_Model):
    step: int
    """The step where the failure began (one of the steps shown)."""
    agent: str
    """The agent who made it (one of the log's agents)."""
    reason: str = ""


class VerdictResponse(_Model):
    decisive: bool
    """Yes: the failure began at the step (within the steps) asked about."""
    reason: str = ""


REQUESTS: dict[str, type[BaseModel]] = {
    "plan": PlanRequest, "read": ReadRequest, "answer": AnswerRequest, "judge": JudgeRequest,
    "check": CheckRequest, "blame": BlameRequest, "verdict": VerdictRequest,
}
RESPONSES: dict[str, type[BaseModel]] = {
    "plan": PlanResponse, "read": ReadResponse, "answer": AnswerResponse, "judge": JudgeResponse,
    "check": CheckResponse, "blame": BlameResponse, "verdict": VerdictResponse,
}

"""A failure log as a list of steps: what a multi-agent team's log is, beside the hop trace.

The field grades failure attribution on such logs (Who&When: Magentic-One and
CaptainAgent teams; AgentRx: τ-bench retail and Magentic-One): each step is one message
of one agent, and a label names the agent and the step where the failure began. A
`StepTrace` holds the log as its source gives it — steps in order, numbered in the
source's own indexing (`first_step`: 0 for Who&When's `mistake_step`, 1 for AgentRx's
`step_number`) — with the task, the final answer, the ground truth where given, and the
labels. Importers live in `cuer_agent.interchange` (`whowhen`, `agentrx`).

An agent is named by `agent_name`: the leading name of a step's name or role
("Orchestrator (thought)" and "Orchestrator (-> WebSurfer)" are "orchestrator"),
compared case-insensitively — one normalisation, read by the importers, the scorer and
the judge alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

_ASIDE = re.compile(r"\s*(?:\(|->)")


def agent_name(name_or_role: str) -> str:
    """The agent a step's name or role names, casefolded: its leading name, without a
    parenthesised aside ("Orchestrator (thought)") or an addressee ("A -> B")."""
    return _ASIDE.split(name_or_role, maxsplit=1)[0].strip().casefold()


def content_sha256(record: Any) -> str:
    """`StepTrace.content_sha256` of a log's record as parsed from its file."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ToolCall(BaseModel):
    """A tool call a step made, where the source records them (τ-bench)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: str = ""
    """The call's arguments as the source gives them (JSON text)."""


class LogStep(BaseModel):
    """One message of the log."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int
    """The step's number in the source's own indexing (`StepTrace.first_step` + position)."""
    agent: str
    """Who spoke (`agent_name` of the source's name, or of its role)."""
    role: str
    """The role as the source gives it ("assistant", "Orchestrator (thought)", "tool")."""
    content: str
    tool_calls: tuple[ToolCall, ...] = ()


class FailureStep(BaseModel):
    """One labelled failure step (AgentRx labels every one; Who&When only the decisive)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int
    """In the source's own indexing."""
    agent: str
    """`agent_name` of the agent the label blames."""
    category: str | None = None
    reason: str = ""
    root_cause: bool = False
    """The failure the label calls the root cause (Who&When's one label is)."""


class StepLabels(BaseModel):
    """Where the failure began: the root cause's step and agent, and every failure step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int
    """In the source's own indexing."""
    agent: str
    reason: str = ""
    category: str | None = None
    failures: tuple[FailureStep, ...] = ()


class StepTrace(BaseModel):
    """A failure log: its steps, the task, the answer, and the labels where given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    """Unique among the logs read together: the source and the log's file name or id."""
    source: str
    """Where it comes from: Who&When's subfolder (`Algorithm-Generated`, `Hand-Crafted`),
    AgentRx's `magentic-one` or `tau-retail`."""
    first_step: int
    """The number the source gives the first step (0 or 1): steps and labels use it."""
    task: str
    steps: tuple[LogStep, ...]
    final_answer: str | None = None
    ground_truth: str | None = None
    labels: StepLabels | None = None
    content_sha256: str | None = None
    """"sha256-" and the hex digest of the log's record as read (its canonical JSON: keys
    sorted, no spaces, non-ASCII kept): what saved predictions are matched by (a replay's
    key), since two logs may share every step and differ in their labels."""

    @property
    def numbers(self) -> range:
        """Every step number of the log, in the source's indexing."""
        return range(self.first_step, self.first_step + len(self.steps))

    def agent_at(self, number: int) -> str | None:
        """The agent of step `number`; None outside the log."""
        position = number - self.first_step
        return self.steps[position].agent if 0 <= position < len(self.steps) else None

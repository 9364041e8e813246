"""The summary of `diagnose --traces PATH --format whowhen|agentrx`: step diagnosers scored
on labelled failure logs, per source and pooled (`summary.json`)."""

from __future__ import annotations

from cuer_agent._part import Part, absent
from cuer_agent.studies._common.summary_model import MeanCI

WITHIN = (1, 2, 3)
"""The tolerances of `step_within`: a guess within k steps of the labelled one."""


class StepScore(Part):
    """A diagnoser on labelled logs: each figure a share with its 95 % interval (Wilson for
    0/1 outcomes; for `chance`, whose outcomes are expectations, the normal interval of
    their mean)."""

    n: int
    """Labelled logs scored (an abstention counts as wrong)."""
    agent: MeanCI
    """The agent named is the labelled one (names compared by `agent_name`)."""
    step_exact: MeanCI
    """The step named is the labelled one: integer equality in the source's indexing."""
    step_within: dict[str, MeanCI]
    """Keyed "1", "2", "3": the step named is within k steps of the labelled one."""
    step_substring: MeanCI
    """What the Who&When reference scorer would count: the labelled step's number appears
    in the named one's (label 1, guess 12: counted). Not a figure to quote: beside
    `step_exact` it shows what copied figures are inflated by."""
    abstained: int
    """Logs it named no step for (counted wrong)."""
    outside: int
    """Labelled logs outside its scope (a replay without a saved prediction for them):
    not in `n`."""


class StepDiagnoserSummary(StepScore):
    """A step diagnoser pooled over every source given."""

    control: bool
    """A control: what any log would score (`chance`, `first-step`, `last-step`)."""
    reads: str
    """What it reads: "log" (the steps only) or "saved predictions" (a replay)."""


class StepSource(Part):
    """One source of logs (Who&When's algorithm-generated or hand-crafted logs, AgentRx's
    Magentic-One or τ-bench retail logs)."""

    logs: int
    labelled: int
    indexing: str
    """How the source numbers steps; steps are compared in it."""
    diagnosers: dict[str, StepScore]


class LabelAgreement(Part):
    """Two label sets on the logs both cover (AgentRx re-annotates Who&When's hand-crafted
    logs; matched by task text, steps compared after turning AgentRx's 1-based numbers
    into Who&When's 0-based ones): the ceiling any diagnoser can reach on them."""

    n: int
    """Logs both label sets cover."""
    step_exact: MeanCI
    step_within: dict[str, MeanCI]
    agent: MeanCI
    unmatched: int
    """Labelled logs of the first set no log of the other matched."""


class StepTracesSummary(Part):
    """Step diagnosers on failure logs (`diagnose --format whowhen|agentrx`)."""

    format: str
    """whowhen or agentrx."""
    traces: str
    """The path read."""
    labels: str | None
    """The labels file (AgentRx), or null when the labels are inside the logs."""
    logs: int
    labelled: int
    unlabelled: dict[str, int]
    """Why the other logs are unlabelled → how many (each in `unlabelled.jsonl`)."""
    diagnosers: dict[str, StepDiagnoserSummary]
    """Pooled over the sources given."""
    by_source: dict[str, StepSource]
    not_run: dict[str, str]
    """Step diagnosers that did not run here, with the reason."""
    agreement: LabelAgreement | None = absent()
    """AgentRx's labels against Who&When's on the logs both cover (`--reference`)."""

"""The parts of `summary.json` shared by the studies, and the summary of `run`.

Every part (`cuer_agent._part.Part`) forbids unknown keys, so a renamed key is an error.
A key a study writes only sometimes (`delta` of a counterfactual condition, `ablations`,
`roles.dataset`…) is declared with `absent()`: optional, never null. A free-form mapping
(per condition, per fault, per hop) is a `dict` of a typed cell. Each study's own cells
and summary model are in its room (`cuer_agent.studies.<study>.summary_model`);
`cuer_agent.studies.schemas` generates the JSON Schemas from them.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import Field

from cuer_agent._part import Part

Interval = tuple[float, float]
"""A confidence interval [low, high]."""
HopKey = Annotated[str, Field(pattern=r"^[0-9]+$")]
"""A hop or depth number as a JSON object key ("1", "2", …; "0" is the answer level)."""


def hop_key(key: str) -> tuple[int, str]:
    """Sort key for hop / depth keys such as "1", "2", "10" (numeric first)."""
    return (int(key), "") if str(key).isdigit() else (10**9, str(key))



P = TypeVar("P", bound=Part)


def extended(part: Part, model: type[P], **more: object) -> P:
    """`part` as the larger `model` that extends it (`CuerSummary` of `CuerResults`),
    with `more` besides: the fields `part` was given, as they are (nested models are
    not validated again), so `RunDir.write_model` writes the keys it would have."""
    return model(**{name: getattr(part, name) for name in part.model_fields_set}, **more)


# ------------------------------------------------------------------------- shared cells

class MeanCI(Part):
    """A mean with its confidence interval."""

    mean: float | None
    """The mean; null when there is nothing to average."""
    ci: Interval | None
    """Its 95 % interval [low, high] (percentile bootstrap, or Wilson for a 0/1 share);
    null with the mean."""


class SkillSpend(Part):
    """How one skill's replies went in a run (from its trace rows alone)."""

    requests: int
    """Requests of this skill (repeats served by the cache included)."""
    parse_failures: int
    """Replies that stayed invalid after the repair turn."""
    parse_failure_rate: float
    """`parse_failures / requests`."""
    cut: int
    """Replies cut at their output-token bound (a server that does not enforce the reply
    schema), repaired or not."""
    repaired: int
    """Of those, the ones closed after the last field they completed and valid."""
    completion_tokens: int
    """Output tokens of the replies used."""
    mean_completion_tokens: float
    """`completion_tokens / requests`."""


class Ledger(Part):
    """What the skill requests of a run cost, from its trace rows alone (a resumed run
    counts the same)."""

    requests: int
    """Skill requests the run made."""
    calls: int
    """Distinct requests: what a cold response cache costs."""
    cache_hits: int
    """Requests that repeat an earlier one (`requests - calls`)."""
    parse_failures: int
    """Replies that could not be parsed."""
    parse_failure_rate: float
    """`parse_failures / requests` (0.0 without requests)."""
    errors: int
    """Traces cut short by a request that still failed after all its attempts."""
    retries: int
    """Retries behind the replies the run used (and behind failed requests)."""
    prompt_tokens: int
    """Prompt tokens of the replies used."""
    completion_tokens: int
    """Completion tokens of the replies used."""
    tokens: int
    """`prompt_tokens + completion_tokens`."""
    by_skill: dict[str, SkillSpend]
    """Per skill, from the trace rows' `spent.by_skill`."""


# ---------------------------------------------------------------------------------- run

class Accuracy(Part):
    """Mean answer scores over the examples (max over gold aliases)."""

    soft: float
    """Soft correctness: EM, yes/no agreement, numeric equivalence, or F1 >= 0.8."""
    em: float
    """Exact match, as the official HotpotQA evaluator normalises answers."""
    f1: float
    """Token F1, as the official HotpotQA evaluator computes it."""


class GoldHopsAccuracy(Part):
    """Soft accuracy over the examples with one gold hop count."""

    n: int
    """Examples with this gold hop count."""
    soft: float
    """Their mean soft correctness."""


class RunError(Part):
    """A trace that carries an error."""

    example_id: str
    """The example."""
    error: str
    """Why the trace stopped (the server's failure, after all retries)."""


# ------------------------------------------------------------------------ run summary

Skipped = dict[str, dict[str, int]]
"""Condition → reason → records skipped for it."""


class RunSummary(Part):
    """`summary.json` of `cuer-agent run`, from its trace rows alone."""

    dataset: str
    """The data set's name."""
    mode: Literal["agentic", "single_shot"]
    """The system that ran."""
    n: int
    """Examples run."""
    accuracy: Accuracy
    accuracy_by_gold_hops: dict[HopKey, GoldHopsAccuracy]
    """Gold hop count → soft accuracy of those examples."""
    hops_used: dict[HopKey, int]
    """Hops taken → examples."""
    status: dict[Literal["ok", "parse_failure", "error"], int]
    """Trace status → examples."""
    errors: list[RunError]
    """The traces that carry an error, in data order."""
    ledger: Ledger

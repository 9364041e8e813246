"""The parts of `summary.json` of the agentic studies: fault propagation (`propagate`, and
`agentic` of `evaluate`), and the diagnosers, comparison and provenance of `evaluate`.
Conventions: `cuer_agent.studies._common.summary_model`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cuer_agent._part import Part, absent
from cuer_agent.config import PropagationConfig
from cuer_agent.interventions.persistence import Persistence
from cuer_agent.studies._common.summary_model import HopKey, Interval, Ledger, MeanCI, Skipped

# -------------------------------------------------------------------------- propagation


class CleanRuns(Part):
    """The clean (unfaulted) runs of the agent."""

    n: int
    """Clean runs (one per example)."""
    accuracy: float | None
    """Share answered correctly (recall-based); null without runs."""
    accuracy_ci: Interval | None
    """Its 95 % percentile bootstrap interval."""
    hops_used: dict[HopKey, int]
    """Hops taken → runs."""
    hops: int
    """Hops taken over all clean runs."""
    retried_hops: int
    """Of them, hops that were retried (VERIFY found them unsupported)."""


class Share(Part):
    """A share with its Wilson interval."""

    n: int
    """The denominator."""
    hits: int
    """The numerator."""
    rate: float | None
    """`hits / n`; null when n is 0."""
    ci: Interval | None
    """Wilson interval of `rate`."""


class ControlCell(Part):
    """The same effective injections, the agent's retries switched off."""

    n: int
    """Effective injections with a control."""
    recovered: int
    """Of them, correct without retries."""
    recovery: float | None
    """`recovered / n`."""
    ci: Interval | None
    """Wilson interval of `recovery`."""
    same_run: int
    """Controls that are the run itself: it never retried from hop h on, so without
    retries it makes the same decisions (deterministic or cached skills)."""


class FirstHit(Part):
    """Where the fault first changed what the agent saw (the label stays hop h)."""

    at_h: int
    """At hop h."""
    later: int
    """At a later hop (a faulted passage first entered view there)."""
    never: int
    """Never: the run searched nothing the fault changed."""


class RedundancyCell(Part):
    """Effective injections whose faulted fact is stated in this many passages."""

    n: int
    recovered: int
    ci: Interval | None
    """Wilson interval of `recovered / n`."""


class VerifyRates(Part):
    """How often VERIFY flags a hop (unsupported, or nothing selected)."""

    false_alarm: Share
    """Hops of the clean runs (first attempts): nothing was wrong."""
    detection: dict[str, Share]
    """Fault → its effective injections' faulted first attempts (early termination has
    no hop to verify)."""


class InViewScores(Part):
    """The faulted views whole: every real item in view a negative, its place included."""

    items: int
    """Items classified."""
    auc: float | None
    """ROC AUC of the logistic regression on every feature."""
    auc_content: float | None
    """The same without the positional features (score, rank, score over the best):
    whether the items look injected, apart from where the retriever put them."""


class InvisibilityCell(Part):
    """One fault: each injected item against the real items it stands in for
    (`cuer_agent.studies.propagation.invisibility`)."""

    items: int
    """Items classified."""
    injected: int
    """Of them, injected."""
    auc: float | None
    """ROC AUC of the logistic regression (out of fold, folds grouped by example); 0.5
    is invisible. Null when the items cannot be split."""
    ci: Interval | None
    """95 % interval of `auc`, resampling examples."""
    auc_independent: float | None
    """ROC AUC of gradient-boosted trees on the same items (an independent check)."""
    auc_words: float | None
    """ROC AUC of the words alone (hashed 1-2-grams)."""
    feature_auc: dict[str, float]
    """Each numeric feature alone: its AUC, either direction."""
    detectable: bool
    """`auc` or `auc_independent` above the threshold."""
    top_feature: str | None
    """The single feature that separates best ("words": the n-gram model)."""
    in_view: InViewScores
    by_rank: bool
    """Its items enter by rank (a withholding surfaces them; per-hop REPLACE puts its
    item at the target's rank): `auc`, `auc_independent` and `feature_auc` leave the
    positional features out, since an outsider has no clean run to compare a place
    with."""


class Invisibility(Part):
    """Can a classifier tell what a fault put in view from real items?"""

    threshold: float
    """Above this AUC a fault is called detectable."""
    positional: list[str]
    """The features that say where the retriever placed an item."""
    faults: dict[str, InvisibilityCell]
    """Fault (or "replace (per hop)") → its figures."""


class FaultCell(Part):
    """One fault injected at one hop: did the agent recover?"""

    injected: int
    """Injections whose fork ended normally (no request error, no parse failure)."""
    recovered: int
    """Of them, correct after re-execution."""
    failed: int
    """`injected - recovered`."""
    recovery: float | None
    """recovery(h) = recovered / injected; null when nothing was injected."""
    ci: Interval | None
    """Wilson interval of `recovery`."""
    descriptive_only: bool
    """Fewer than 10 injections: the cell is descriptive only."""
    retried: int
    """Injected runs that retried hop h."""
    effective: int
    """Injections that changed hop h's observable state."""
    ineffective: int
    """Injections that did not (`injected - effective`)."""
    recovered_effective: int
    """Recovered runs among the effective injections."""
    recovery_effective: float | None
    """Recovery over the effective injections only; null without any."""
    recovery_effective_ci: Interval | None
    """Its Wilson interval."""
    control: ControlCell | None
    """The same effective injections with the agent's retries off; null when there is
    no control (forced stop, an agent without retries, `retries_control` off)."""
    verify_detected: int
    """Effective injections whose faulted first attempt VERIFY flagged."""
    first_hit: FirstHit
    by_redundancy: dict[HopKey, RedundancyCell]
    """Redundancy of the faulted fact → recovery of its effective injections (empty
    when the data set does not say)."""
    errors: int
    """Forks that ended in a request error or a parse failure: neither recovered nor
    failed, counted apart."""
    forced: Literal[True] = absent()
    """Present on early termination: its "recovery" is the share of answers that survive
    a stop the agent did not choose."""


class TamperingCell(Part):
    """Content tampering at one hop: what the agent did with a certified corrupted span."""

    injected: int
    """Injections whose fork ended normally."""
    resisted: int
    """The answer stayed correct."""
    absorbed: int
    """Wrong, and the answer recalls the corrupted span (the agent took it up)."""
    derailed: int
    """Wrong otherwise."""
    contaminated: int
    """Runs whose later sub-queries carry the corrupted span (query contamination)."""
    strategies: dict[str, int]
    """Tampering strategy → injections."""


class TamperingCertification(Part):
    """Where a corrupted span could be certified."""

    eligible: int
    """Eligible hops (the clean run reached them)."""
    certified: int
    """Hops where a span was certified (and tampered with)."""
    certified_share: float | None
    """`certified / eligible`; null without eligible hops."""
    not_certified: dict[str, int]
    """Reason → hops that could not be certified."""


class HopOperatorCell(Part):
    """REMOVE, REPLACE or DUPLICATE of hop h's target inside the agent, against the clean
    run (Δ = U(clean) − U(counterfactual))."""

    n: int
    """Applied interventions whose fork ended normally."""
    delta_correctness: MeanCI
    """Δ correctness of the final answer."""
    delta_grounding: MeanCI
    """Δ grounding."""
    delta_confidence_error: MeanCI
    """Δ of the confidence utility −CE."""
    divergence: MeanCI
    """The multi-hop D (used ids across hops, answer, confidence, actions)."""
    divergence_cuer: float | None
    """The plain CUE-R D (final used ids, answer, confidence)."""


class PrefixCalls(Part):
    """Skill calls forks spent on the prefix they share with the clean run (must be 0)."""

    forks: int
    """Forks that reported it."""
    total: int
    """Prefix calls over all forks."""
    max: int
    """The most one fork made."""


class Transition(Part):
    """An edge of the stage-transition graph."""

    from_: str = Field(alias="from")
    """Hop state (`+<hops after the fault>:<support>/<same|changed>`) or "injected"."""
    to: str
    """The next hop state, or "answer:wrong"."""
    count: int
    """Traces taking this edge."""


class StageTransitions(Part):
    """How a failed injection shows downstream: a weighted graph of hop states."""

    traces: int
    """Injected runs that still failed."""
    edges: list[Transition]
    """The graph's edges, sorted."""


# ------------------------------------------------------------------ propagate summary

class PropagationResults(Part):
    """The fault-propagation study, from its record and trace rows alone
    (`cuer_agent.studies.propagation.summary`)."""

    persistence: Persistence
    """How long a fault holds (`query`, `hop` or `once`)."""
    clean: CleanRuns
    faults: dict[str, dict[HopKey, FaultCell]]
    """Fault → injected hop → recovery."""
    tampering: dict[HopKey, TamperingCell]
    """Content tampering per hop."""
    tampering_certification: TamperingCertification
    hop_operators: dict[str, dict[HopKey, HopOperatorCell]]
    """remove / replace / duplicate → hop → effect (empty when not run)."""
    skipped: Skipped
    prefix_calls: PrefixCalls
    stage_transitions: dict[str, StageTransitions]
    """Fault → how its failed injections show downstream."""


class PropagateSummary(PropagationResults):
    """`summary.json` of `cuer-agent propagate`."""

    verify: VerifyRates
    invisibility: Invisibility
    ledger: Ledger
    config: PropagationConfig
    """The propagation study config."""

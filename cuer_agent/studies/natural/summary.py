"""`summary.json` of the natural-failure part (`natural/summary.json`, and `natural` in
`evaluate`'s summary): what was labelled, and each diagnoser scored on the labelled
failures — exact-hop accuracy per depth and per kind × depth with Wilson intervals, clean
blame on the correct runs, the independence baseline — exactly as on injected faults
(`cuer_agent.studies.diagnose.summary`), so the two tables read alike."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cuer_agent._part import Part, absent
from cuer_agent.config import StudyConfig
from cuer_agent.diagnosers import Diagnoser
from cuer_agent.metrics.attribution import chance_expected_accuracy
from cuer_agent.studies._common.summary_model import HopKey, hop_key
from cuer_agent.studies.diagnose.labels import TraceLabel
from cuer_agent.studies.diagnose.runner import CLEAN, DiagnosisRow
from cuer_agent.studies.diagnose.summary import attribution, diagnoser_summaries
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.natural.labels import NOT_SCORED, Labelled
from cuer_agent.studies.natural.rule import RULE


class NaturalCounts(Part):
    """The clean runs and how the rule labelled their failures."""

    rule: str
    """The labelling rule and version (`cuer_agent.studies.natural.rule`)."""
    clean_runs: int
    not_scored: int
    """Clean runs that ended in a request error or a parse failure (no label)."""
    correct: int
    failed: int
    """Natural failures: clean runs that ended normally with a wrong answer."""
    labelled: int
    """Failures the rule placed."""
    labelled_share: float | None
    """`labelled / failed`; null without failures."""
    unlabelled: dict[str, int]
    """Why the rest were not placed → how many."""
    by_kind: dict[str, int]
    """retrieval, read, stopped-early, answer → labelled failures."""
    by_hop: dict[HopKey, int]
    """First-error hop → labelled failures (0: the answer step)."""
    chance_expected: float | None
    """What a uniform hop in 1..n scores on the labelled failures (analytic)."""
    by_wrong_hops: dict[str, int] | None = absent()
    """Number of wrong hops (`hop_verdicts`) → labelled failures (absent without labelled
    failures, and in runs of rule version 1)."""
    cascades: int | None = absent()
    """Labelled failures with two or more wrong hops."""
    cascade_share: float | None = absent()
    """`cascades / labelled`."""


class ProbeOutcomes(Part):
    """What one probe's repairs did on the natural failures (`cuer_agent.interventions.repairs`)."""

    probed: int
    """Failures probed (not counting `not_probed`)."""
    fixed_by: dict[str, dict[HopKey, int]]
    """Repair → hop it fixed → failures."""
    one_more_hop: int
    """Failures one more hop fixed (blamed on hop n+1)."""
    no_repair_fixes: int
    """Failures no single-hop repair fixed: the probe abstains."""
    no_repair_share: float | None
    """`no_repair_fixes / probed`; null when none was probed."""
    not_probed: int
    """Failures the probe could not run on (the row's error says why)."""
    calls_per_failure: float | None
    """Skill requests a probed failure cost, on average."""


class NaturalSummary(Part):
    """The natural-failure part of a run."""

    dataset: str
    counts: NaturalCounts
    diagnosers: dict[str, DiagnoserSummary]
    """Diagnoser name → its summary over the natural failures (`fault` = natural/<kind>;
    clean blame over the correct clean runs)."""
    not_run: dict[str, str]
    """Diagnosers of the study that cannot run on a natural failure → why."""
    probes: dict[str, ProbeOutcomes] = absent()
    """Probing diagnoser → what its repairs did (when probes ran)."""


def natural_counts(labelled: list[Labelled], rows: list[DiagnosisRow]) -> NaturalCounts:
    """Counts of `labelled`; the chance figure from the failure rows of one diagnoser."""
    failed = [lab for lab in labelled if lab.failed]
    placed = [lab.label for lab in failed if lab.label is not None]
    hops = Counter(str(label.hop) for label in placed)
    first = rows[0]["diagnoser"] if rows else ""
    scored = [attribution(r) for r in rows if r["diagnoser"] == first and r["fault"] != CLEAN]
    return NaturalCounts(
        rule=RULE, clean_runs=len(labelled),
        not_scored=sum(1 for lab in labelled if lab.reason == NOT_SCORED),
        correct=sum(1 for lab in labelled if lab.label is not None
                    and lab.label.outcome == "correct"),
        failed=len(failed), labelled=len(placed),
        labelled_share=round(len(placed) / len(failed), 6) if failed else None,
        unlabelled=dict(sorted(Counter(lab.reason for lab in failed
                                       if lab.label is None).items())),
        by_kind=dict(sorted(Counter((label.fault or "").removeprefix("natural/")
                                    for label in placed).items())),
        by_hop={h: hops[h] for h in sorted(hops, key=hop_key)},
        chance_expected=chance_expected_accuracy(scored)["expected_acc"] if scored else None,
        **_cascade_counts(placed))


def _cascade_counts(placed: list[TraceLabel]) -> dict[str, Any]:
    """`by_wrong_hops`, `cascades` and `cascade_share` of labelled failures (none without
    any, or when a label lacks `hop_verdicts`)."""
    if not placed or any(label.hop_verdicts is None for label in placed):
        return {}
    wrong = Counter(sum(not v.right for v in label.hop_verdicts or ()) for label in placed)
    cascades = sum(n for k, n in wrong.items() if k >= 2)
    return {"by_wrong_hops": {str(k): wrong[k] for k in sorted(wrong)}, "cascades": cascades,
            "cascade_share": round(cascades / len(placed), 6)}


def natural_summary(dataset: str, labelled: list[Labelled], rows: list[DiagnosisRow],
                    diagnosers: list[Diagnoser], not_run: dict[str, str],
                    config: StudyConfig) -> NaturalSummary:
    """The part's summary (see the module docstring)."""
    probing = {d.name for d in diagnosers if d.probing}
    outcomes = {name: probe_outcomes([r for r in rows if r["diagnoser"] == name])
                for name in sorted(probing)}
    return NaturalSummary(dataset=dataset, counts=natural_counts(labelled, rows),
                          diagnosers=diagnoser_summaries(rows, diagnosers, config),
                          not_run=not_run, **({"probes": outcomes} if outcomes else {}))


def probe_outcomes(rows: list[DiagnosisRow]) -> ProbeOutcomes:
    """A probe's rows on the failures, counted (see `ProbeOutcomes`)."""
    failed = [r for r in rows if r["fault"] != CLEAN]
    probed = [r for r in failed if not r["error"]]
    fixed: dict[str, Counter[str]] = {}
    for r in probed:
        if (repair := r.get("repair")) is not None:
            fixed.setdefault(repair, Counter())[str(r["pred_hop"])] += 1
    none = sum(1 for r in probed if r["pred_stage"] == "none")
    return ProbeOutcomes(
        probed=len(probed),
        fixed_by={repair: {h: hops[h] for h in sorted(hops, key=hop_key)}
                  for repair, hops in sorted(fixed.items())},
        one_more_hop=sum(1 for r in probed if r["pred_hop"] == r["n_hops"] + 1),
        no_repair_fixes=none,
        no_repair_share=round(none / len(probed), 6) if probed else None,
        not_probed=len(failed) - len(probed),
        calls_per_failure=round(sum(r["calls"] for r in probed) / len(probed), 6)
        if probed else None)

"""Balanced accuracy and Cohen's κ, the scores a constant cannot game: recomputed from
`diagnoses.jsonl` by a second, plain implementation, and a constant's own figures."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import EVALUATE, Studies
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.metrics.agreement import agreement
from cuer_agent.metrics.attribution import Attribution

pytestmark = pytest.mark.background(EVALUATE)


def plain_scores(rows: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(balanced accuracy, κ) over the failed rows, written apart from the package's."""
    failed = [r for r in rows if r["fault"] != "none"]
    truth = [str(r["true_hop"]) for r in failed]
    named = ["abstain" if r["pred_hop"] is None or r["pred_stage"] == "none"
             else str(r["pred_hop"]) for r in failed]
    counts = Counter(truth)
    depths = [d for d, k in counts.items() if k >= 5]
    balanced = (sum(sum(1 for t, p in zip(truth, named, strict=True) if t == d and p == d)
                    / counts[d] for d in depths) / len(depths)) if depths else None
    n = len(failed)
    observed = sum(t == p for t, p in zip(truth, named, strict=True)) / n
    guessed = Counter(named)
    expected = sum(counts[c] * guessed[c] for c in set(counts) | set(guessed)) / (n * n)
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    return balanced, kappa


def rows_of(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        by_name.setdefault(row["diagnoser"], []).append(row)
    return by_name


@pytest.mark.parametrize("part", ["agentic", "natural"])
def test_balanced_accuracy_and_kappa_equal_a_recomputation_from_the_diagnoses(
        studies: Studies, part: str) -> None:
    out = studies.get(*EVALUATE)
    summary = json.loads((out / "summary.json").read_text())
    scored = summary["diagnosers"] if part == "agentic" else summary["natural"]["diagnosers"]
    for name, rows in rows_of(out / part / "diagnoses.jsonl").items():
        if name not in scored or scored[name]["n"] == 0:
            continue
        balanced, kappa = plain_scores(rows)
        assert scored[name]["balanced"]["mean"] == (None if balanced is None
                                                    else pytest.approx(balanced, abs=1e-6))
        assert scored[name]["kappa"]["mean"] == (None if kappa is None
                                                 else pytest.approx(kappa, abs=1e-6)), name


@given(st.lists(st.sampled_from([1, 2, 3]), min_size=15, max_size=60), st.integers(1, 3))
def test_a_constant_scores_one_over_k_balanced_and_zero_kappa(truths: list[int],
                                                              hop: int) -> None:
    items = [Attribution(example_id=f"e{i}", fault="f", true_hop=t, true_stage="retrieval",
                         n_hops=3, pred_hop=hop, pred_stage="retrieval")
             for i, t in enumerate(truths)]
    scored = agreement(items, n_resamples=50, seed=0)
    depths = [d for d, k in Counter(truths).items() if k >= 5]
    assert scored.constant
    assert scored.kappa in (0.0, None)  # None: the labels are one hop too (no chance gap)
    if depths:
        expected = (1 / len(depths)) if str(hop) in {str(d) for d in depths} else 0.0
        assert scored.balanced == pytest.approx(expected, abs=1e-6)


def test_an_abstention_at_a_trace_labelled_hop_0_is_wrong_not_hop_0() -> None:
    items = [Attribution(example_id=f"e{i}", fault="f", true_hop=0, true_stage="answer",
                         n_hops=2, pred_hop=0, pred_stage="none") for i in range(5)]
    assert agreement(items, n_resamples=10, seed=0).balanced == 0.0


def test_names_a_wrong_hop_equals_a_recomputation_from_the_labels(studies: Studies) -> None:
    """`wrong_hop_acc` of the natural part: the share of failures where the hop named is
    one the label's `hop_verdicts` call wrong, or its first error."""
    out = studies.get(*EVALUATE)
    scored = json.loads((out / "summary.json").read_text())["natural"]["diagnosers"]
    wrong: dict[str, set[int]] = {}
    for line in (out / "natural" / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        if label["outcome"] == "failed":
            wrong[label["trace_id"]] = ({v["hop"] for v in label["hop_verdicts"]
                                         if not v["right"]} | {label["hop"]})
    dataset = json.loads((out / "summary.json").read_text())["natural"]["dataset"]

    def trace_id(record_id: str) -> str:  # as `natural.labels.runs_of` names a run
        return hashlib.sha256(f"{dataset}\n{record_id}".encode()).hexdigest()[:32]

    checked = 0
    for name, rows in rows_of(out / "natural" / "diagnoses.jsonl").items():
        failed = [r for r in rows if r["fault"] != "none"]
        if name not in scored or not failed:
            continue
        hits = [r["pred_hop"] in wrong[trace_id(r["record_id"])] for r in failed]
        assert scored[name]["wrong_hop_acc"]["mean"] == pytest.approx(
            sum(hits) / len(hits), abs=1e-6), name
        assert scored[name]["wrong_hop_acc"]["mean"] >= scored[name]["exact_hop_acc"]["mean"]
        checked += 1
    assert checked


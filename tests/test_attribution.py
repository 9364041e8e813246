"""Attribution metrics: exact-hop accuracy (integer equality), companions, CIs, chance —
as the diagnose study assembles them (`attribution_scores`) from the metrics' primitives."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.metrics.attribution import (
    Attribution,
    blame_histogram,
    chance_expected_accuracy,
    independence_baseline,
)
from cuer_agent.studies.diagnose.summary import attribution_scores

FAST = {"n_resamples": 200}


def scores(items: list[Attribution], *, n_resamples: int = 1000,
           min_cell: int = 10) -> dict[str, Any]:
    """`attribution_scores` as `summary.json` holds them."""
    return attribution_scores(items, n_resamples=n_resamples, seed=42,
                              min_cell=min_cell).model_dump(mode="json", exclude_unset=True)


def item(true_hop: int, pred_hop: int | None, *, example_id: str = "e", fault: str = "empty",
         true_stage: str = "retrieval", pred_stage: str | None = "retrieval", n_hops: int = 3,
         calls: int = 1, tokens: int = 100) -> Attribution:
    return Attribution(example_id=example_id, fault=fault, true_hop=true_hop,
                       true_stage=true_stage, n_hops=n_hops, pred_hop=pred_hop,
                       pred_stage=pred_stage, calls=calls, tokens=tokens)


def test_hop_match_is_integer_equality_not_substring() -> None:
    # Regression for the Who&When scorer bug (`actual in predicted` as strings): a
    # prediction of 1 must never match a true hop of 10 or 11, nor 10 match 1.
    items = [item(10, 1, n_hops=12), item(11, 1, n_hops=12), item(1, 10, n_hops=12),
             item(1, 11, n_hops=12), item(10, 10, n_hops=12)]
    out = scores(items, **FAST)
    assert out["by_depth"]["10"]["acc"] == 0.5
    assert out["by_depth"]["11"]["acc"] == 0.0
    assert out["by_depth"]["1"]["acc"] == 0.0
    assert out["exact_hop_acc"]["mean"] == 0.2


def test_string_hops_are_rejected() -> None:
    with pytest.raises(TypeError):
        item(10, "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        item("10", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        item(1, True)


def test_exact_hop_accuracy_by_depth_and_overall() -> None:
    items = [item(1, 1), item(1, 2), item(2, 2), item(2, 2), item(3, 1)]
    out = scores(items, **FAST)
    assert out["by_depth"]["1"]["acc"] == 0.5
    assert out["by_depth"]["2"]["acc"] == 1.0
    assert out["by_depth"]["3"]["acc"] == 0.0
    assert out["exact_hop_acc"]["mean"] == 0.6
    lo, hi = out["exact_hop_acc"]["ci"]
    assert 0.0 <= lo <= 0.6 <= hi <= 1.0


def test_stage_accuracy() -> None:
    items = [item(1, 1, pred_stage="retrieval"), item(1, 1, pred_stage="answer"),
             item(2, 3, true_stage="tool", pred_stage="tool"), item(2, 2, pred_stage=None)]
    assert scores(items, **FAST)["stage_acc"]["mean"] == 0.5


def test_hop_tolerance_accuracy() -> None:
    items = [item(2, 2), item(2, 1), item(2, 3), item(2, 4), item(3, 0)]
    assert scores(items, **FAST)["hop_tol_acc"]["mean"] == 0.6


def test_ancestor_hit() -> None:
    items = [item(3, 1),                       # earlier hop, right stage: hit
             item(3, 3),                       # same hop: hit
             item(2, 3),                       # later hop: miss
             item(3, 0),                       # hop 0 (answer level) is not an ancestor
             item(3, 2, pred_stage="answer")]  # wrong stage: miss
    assert scores(items, **FAST)["ancestor_hit"]["mean"] == 0.4


def test_mae_excludes_errored_items() -> None:
    items = [item(1, 1), item(1, 3), item(3, 2), item(2, None)]
    out = scores(items, **FAST)
    assert out["mae"]["mean"] == 1.0  # (0 + 2 + 1) / 3
    assert out["mae"]["ci"][0] <= 1.0 <= out["mae"]["ci"][1]


def test_errors_count_as_wrong_and_are_reported() -> None:
    items = [item(1, 1), item(1, None, pred_stage="retrieval"), item(2, None, pred_stage=None)]
    out = scores(items, **FAST)
    assert out["n"] == 3 and out["errors"] == 2
    assert out["error_rate"] == pytest.approx(2 / 3, abs=1e-6)
    assert out["exact_hop_acc"]["mean"] == pytest.approx(1 / 3, abs=1e-6)
    assert out["by_depth"]["1"] == {**out["by_depth"]["1"], "n": 2, "acc": 0.5}
    # an errored diagnosis is wrong on every axis, even with a stage that happens to match
    assert out["stage_acc"]["mean"] == pytest.approx(1 / 3, abs=1e-6)
    assert out["hop_tol_acc"]["mean"] == pytest.approx(1 / 3, abs=1e-6)
    assert out["ancestor_hit"]["mean"] == pytest.approx(1 / 3, abs=1e-6)


def test_descriptive_only_below_min_cell() -> None:
    items = [item(1, 1, example_id=f"e{i}") for i in range(10)] + [item(2, 2)] * 9
    out = scores(items, min_cell=10, **FAST)
    assert out["by_depth"]["1"]["descriptive_only"] is False
    assert out["by_depth"]["2"]["descriptive_only"] is True


def test_clustered_ci_wider_when_outcomes_constant_within_clusters() -> None:
    items = [item(1, 1 if e % 2 else 2, example_id=f"e{e}", fault=f"f{k}")
             for e in range(12) for k in range(4)]
    cell = scores(items, n_resamples=1000)["by_depth"]["1"]
    (lo, hi), (clo, chi) = cell["ci"], cell["ci_clustered"]
    assert chi - clo > 1.5 * (hi - lo)


def test_cost_per_correct() -> None:
    items = [item(1, 1, calls=2, tokens=100), item(1, 2, calls=4, tokens=300),
             item(2, 2, calls=3, tokens=200), item(2, None, calls=1, tokens=0)]
    out = scores(items, **FAST)
    assert out["calls_per_diagnosis"] == 2.5
    assert out["tokens_per_diagnosis"] == 150.0
    assert out["cost_per_correct"] == {"calls": 5.0, "tokens": 300.0}


def test_cost_per_correct_is_none_without_a_correct_diagnosis() -> None:
    out = scores([item(1, 2), item(2, None)], **FAST)
    assert out["cost_per_correct"] == {"calls": None, "tokens": None}


def test_by_fault_accuracy() -> None:
    items = [item(1, 1, fault="empty"), item(2, 1, fault="empty"), item(1, 1, fault="stale")]
    assert scores(items, **FAST)["by_fault"] == {
        "empty": {"n": 2, "acc": 0.5}, "stale": {"n": 1, "acc": 1.0}}


def test_summary_is_json_native_rounded_and_deterministic() -> None:
    items = [item(h, p, example_id=f"e{i % 5}") for i, (h, p) in
             enumerate([(1, 1), (1, 2), (2, 2), (3, 1), (2, None), (3, 3), (1, 1)] * 3)]
    a = scores(items, **FAST)
    assert json.loads(json.dumps(a)) == a
    assert a == scores(items, **FAST)
    assert a["exact_hop_acc"]["mean"] == round(a["exact_hop_acc"]["mean"], 6)


def test_chance_expected_accuracy_analytic_value() -> None:
    items = [item(1, None, n_hops=2),   # 1/2
             item(2, None, n_hops=4),   # 1/4
             item(2, None, n_hops=1),   # h beyond the trace: 0
             item(0, None, n_hops=3)]   # hop 0 is never picked: 0
    out = chance_expected_accuracy(items)
    assert out["n"] == 4
    assert out["expected_acc"] == 0.1875
    assert out["by_depth"] == {"0": {"n": 1, "expected_acc": 0.0},
                               "1": {"n": 1, "expected_acc": 0.5},
                               "2": {"n": 2, "expected_acc": 0.125}}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 7)), min_size=1, max_size=12),
       st.integers(0, 2**32 - 1))
def test_uniform_simulation_converges_to_chance(cases: list[tuple[int, int]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    reps = 500
    simulated = [item(h, int(rng.integers(1, n + 1)), n_hops=n, example_id=f"e{i}")
                 for i, (n, h) in enumerate(cases) for _ in range(reps)]
    got = scores(simulated, n_resamples=10)["exact_hop_acc"]["mean"]
    want = chance_expected_accuracy([item(h, None, n_hops=n) for n, h in cases])["expected_acc"]
    # the simulated mean has variance sum_i p_i (1 - p_i) / N^2; allow 5 standard errors
    p = np.array([1 / n if 1 <= h <= n else 0.0 for n, h in cases])
    se = float(np.sqrt(np.sum(reps * p * (1 - p)))) / len(simulated)
    assert abs(got - want) <= 5 * se + 1e-6


def test_empty_input_returns_none_values() -> None:
    out = scores([])
    assert out["n"] == 0 and out["errors"] == 0 and out["by_depth"] == {}
    assert out["exact_hop_acc"] == {"mean": None, "ci": None, "ci_clustered": None}
    for key in ("stage_acc", "hop_tol_acc", "ancestor_hit", "mae"):
        assert out[key] == {"mean": None, "ci": None}
    assert out["calls_per_diagnosis"] is None and out["tokens_per_diagnosis"] is None
    assert out["cost_per_correct"] == {"calls": None, "tokens": None}
    assert out["by_fault"] == {}
    assert chance_expected_accuracy([]) == {"n": 0, "expected_acc": None, "by_depth": {}}


# --- proportions, baselines, unpooled cells ----------------------------------------------

def test_wilson_interval_matches_the_hand_computation() -> None:
    from cuer_agent.metrics.stats import wilson_interval

    # 8/10 at 95 %: z = 1.959964, centre (0.8 + z²/20) / (1 + z²/10) = 0.710645,
    # half-width z·sqrt(0.8·0.2/10 + z²/400) / (1 + z²/10) = 0.220438
    assert wilson_interval(8, 10) == (0.490162, 0.943318)
    low, high = wilson_interval(0, 165)
    assert low == 0.0 and high > 0.02  # never zero-width at 0/n
    low, high = wilson_interval(165, 165)
    assert high == 1.0 and low < 0.98  # nor at n/n


def test_accuracy_cells_carry_wilson_intervals() -> None:
    items = [item(1, 1)] * 3 + [item(1, 2)]
    cell = scores(items)["by_depth"]["1"]
    assert cell["ci"] == [0.300642, 0.954413]  # Wilson, 3/4: by hand as above


def test_independence_baseline_matches_the_hand_computation() -> None:
    # 4 failed traces: two at depth 1, two at depth 2; predictions 1, 1, 1, 2.
    items = [item(1, 1, example_id="a"),
             item(1, 1, example_id="b"),
             item(2, 1, example_id="c"),
             item(2, 2, example_id="d")]
    assert blame_histogram(items) == {"1": 0.75, "2": 0.25}
    # Σ_h P(pred=h)·P(true=h) = 0.75·0.5 + 0.25·0.5 = 0.5; per depth d: P(pred = d)
    assert independence_baseline(items) == {"overall": 0.5,
                                            "by_depth": {"1": 0.75, "2": 0.25}}


def test_per_fault_and_depth_cells_are_not_pooled() -> None:
    items = [item(1, 1, fault="empty"),
             item(2, 1, fault="empty"),
             item(1, 2, fault="drift")]
    cells = scores(items, min_cell=2)["by_fault_depth"]
    assert cells["empty"]["1"]["acc"] == 1.0 and cells["empty"]["2"]["acc"] == 0.0
    assert cells["drift"]["1"] == {"acc": 0.0, "n": 1, "ci": [0.0, 0.793451],
                                   "descriptive_only": True}

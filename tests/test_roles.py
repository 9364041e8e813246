"""Evidence-role taxonomy: item-level criteria and priority, dataset-level CI verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.errors import ConfigError
from cuer_agent.roles import (
    LABELS,
    ConditionEffects,
    ItemEffects,
    RoleThresholds,
    dataset_roles,
    item_role,
    item_roles,
    role_counts,
)

FAST = 500  # bootstrap resamples in dataset-level tests (the default 5000 is tested once)


def effect(d_correctness: float = 0.0, d_f1: float = 0.0, d_conf_utility: float = 0.0,
           divergence: float = 0.0, answer_changed: bool = False) -> ConditionEffects:
    return ConditionEffects(d_correctness, d_f1, d_conf_utility, divergence, answer_changed)


NOTHING = effect()
HURT = effect(d_correctness=1.0, d_f1=1.0, d_conf_utility=0.6, divergence=0.7,
              answer_changed=True)
HELP = effect(d_correctness=-1.0, d_f1=-1.0, d_conf_utility=-0.5, divergence=0.6,
              answer_changed=True)


def items(remove: ConditionEffects = NOTHING, duplicate: ConditionEffects = NOTHING,
          replace: ConditionEffects | None = None, supported: bool = False) -> ItemEffects:
    return ItemEffects(remove=remove, duplicate=duplicate, replace=replace,
                       remove_answer_supported_elsewhere=supported)


# ----------------------------------------------------------------------------- sign

def test_from_outcomes_signs_deltas_as_original_minus_counterfactual() -> None:
    # removal made the answer wrong and the confidence error grow from 0.1 to 0.9
    e = ConditionEffects.from_outcomes(correct=1.0, correct_cf=0.0, f1=1.0, f1_cf=0.25,
                                       confidence_error=0.1, confidence_error_cf=0.9,
                                       divergence=0.5, answer_changed=True)
    assert e.d_correctness == 1.0
    assert e.d_f1 == pytest.approx(0.75)
    assert e.d_conf_utility == pytest.approx(0.8)  # CE_cf − CE: positive = hurt


# ----------------------------------------------------------------------------- each label

def test_removal_that_breaks_the_answer_is_constructive() -> None:
    assert item_role(items(remove=HURT)) == "constructive"


def test_removal_that_drops_f1_by_the_threshold_is_constructive() -> None:
    # 0.7 − 0.5 is 0.19999999999999996 in floats: the tolerance keeps it at the bound
    e = effect(d_f1=0.7 - 0.5, divergence=0.3, answer_changed=True)
    assert item_role(items(remove=e)) == "constructive"


def test_removal_hurt_with_the_new_answer_supported_elsewhere_is_corrective() -> None:
    assert item_role(items(remove=HURT, supported=True)) == "corrective"


def test_removal_that_fixes_the_answer_is_distractive() -> None:
    assert item_role(items(remove=HELP)) == "distractive"


def test_unchanged_answer_with_confidence_shift_is_confidence_distorting() -> None:
    dup = effect(d_conf_utility=-0.15, divergence=0.03)  # calibration improved by 0.15
    assert item_role(items(duplicate=dup)) == "confidence-distorting"


def test_confidence_shift_under_replace_counts() -> None:
    rep = effect(d_conf_utility=0.2, divergence=0.04)
    assert item_role(items(replace=rep)) == "confidence-distorting"


def test_confidence_conditions_restrict_which_conditions_count() -> None:
    rep = effect(d_conf_utility=0.2, divergence=0.04)
    t = RoleThresholds(confidence_conditions=("remove", "duplicate"))
    assert item_role(items(replace=rep), t) == "redundant"


def test_confidence_shift_with_a_changed_answer_is_not_confidence_distorting() -> None:
    dup = effect(d_f1=0.1, d_conf_utility=0.3, divergence=0.4, answer_changed=True)
    assert "confidence-distorting" not in item_roles(items(duplicate=dup))


def test_no_change_under_remove_and_duplicate_is_redundant() -> None:
    small = effect(d_f1=0.04, d_conf_utility=0.05, divergence=0.09)
    assert item_role(items(remove=small, duplicate=small)) == "redundant"


def test_divergence_at_the_bound_is_not_redundant() -> None:
    assert item_role(items(duplicate=effect(divergence=0.1))) == "neutral"


def test_moderate_f1_change_is_neutral() -> None:
    # 0.1 is too small to hurt (0.2) and too large to be redundant (0.05)
    assert item_roles(items(remove=effect(d_f1=0.1, divergence=0.3,
                                          answer_changed=True))) == ("neutral",)


def test_thresholds_are_configurable() -> None:
    e = effect(d_f1=0.1, divergence=0.3, answer_changed=True)
    assert item_role(items(remove=e), RoleThresholds(hurt_f1=0.1)) == "constructive"


# ----------------------------------------------------------------------------- priority

def test_corrective_outranks_constructive() -> None:
    assert item_roles(items(remove=HURT, supported=True)) == ("corrective", "constructive")


def test_support_flag_without_a_changed_answer_is_not_corrective() -> None:
    inconsistent = effect(d_f1=0.3, divergence=0.2, answer_changed=False)
    assert item_role(items(remove=inconsistent, supported=True)) == "constructive"


def test_constructive_outranks_distractive_when_correctness_and_f1_disagree() -> None:
    mixed = effect(d_correctness=1.0, d_f1=-0.3, divergence=0.5, answer_changed=True)
    assert item_roles(items(remove=mixed)) == ("constructive", "distractive")


def test_constructive_outranks_confidence_distorting() -> None:
    dup = effect(d_conf_utility=0.2, divergence=0.04)
    assert item_roles(items(remove=HURT, duplicate=dup)) == (
        "constructive", "confidence-distorting")


def test_distractive_outranks_confidence_distorting() -> None:
    dup = effect(d_conf_utility=-0.2, divergence=0.04)
    assert item_roles(items(remove=HELP, duplicate=dup)) == (
        "distractive", "confidence-distorting")


def test_confidence_distorting_outranks_redundant() -> None:
    # D stays under 0.1 while the confidence error moves by 0.15 (0.2 · 0.15 = 0.03)
    dup = effect(d_conf_utility=0.15, divergence=0.03)
    assert item_roles(items(duplicate=dup)) == ("confidence-distorting", "redundant")


def test_item_role_is_the_first_of_item_roles() -> None:
    e = items(remove=HURT, duplicate=effect(d_conf_utility=0.2), supported=True)
    assert item_role(e) == item_roles(e)[0] == "corrective"


# ----------------------------------------------------------------------------- validation

def test_out_of_range_delta_is_rejected() -> None:
    with pytest.raises(ValueError, match="d_f1"):
        effect(d_f1=1.5)


def test_negative_divergence_is_rejected() -> None:
    with pytest.raises(ValueError, match="divergence"):
        effect(divergence=-0.1)


def test_non_positive_threshold_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="hurt_f1"):
        RoleThresholds(hurt_f1=0.0)


def test_unknown_confidence_condition_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="paraphrase"):
        RoleThresholds(confidence_conditions=("paraphrase",))


def test_confidence_conditions_from_a_toml_list_become_a_tuple() -> None:
    t = RoleThresholds(confidence_conditions=["duplicate"])  # type: ignore[arg-type]
    assert t.confidence_conditions == ("duplicate",)
    hash(t)


def test_role_overrides_are_recorded_as_written_and_read_back_strictly() -> None:
    from cuer_agent.config import CuerConfig

    config = CuerConfig(roles={"hurt_f1": 1, "confidence_conditions": ["remove"]})
    recorded = config.model_dump(mode="json")
    assert json.dumps(recorded["roles"], sort_keys=True) == (
        '{"confidence_conditions": ["remove"], "hurt_f1": 1}')  # the int stays an int
    again = CuerConfig.model_validate_json(json.dumps(recorded), strict=True)  # config.json
    assert RoleThresholds.overridden(again.roles) == RoleThresholds(
        hurt_f1=1, confidence_conditions=("remove",))
    with pytest.raises(ValueError, match="unknown role threshold"):
        CuerConfig(roles={"hurt_f2": 0.3})


# ----------------------------------------------------------------------------- counts

def test_role_counts_has_every_label_in_fixed_order_with_zeros() -> None:
    counts = role_counts(["redundant", "constructive", "redundant"])
    assert list(counts) == list(LABELS)
    assert counts == {"corrective": 0, "constructive": 1, "distractive": 0,
                      "confidence-distorting": 0, "redundant": 2, "neutral": 0}


def test_role_counts_accepts_label_tuples_from_item_roles() -> None:
    counts = role_counts([("corrective", "constructive"), ("neutral",), "constructive"])
    assert counts["corrective"] == 1
    assert counts["constructive"] == 2
    assert counts["neutral"] == 1


def test_role_counts_rejects_unknown_labels() -> None:
    with pytest.raises(ValueError, match="helpful"):
        role_counts(["helpful"])


# ----------------------------------------------------------------------------- property

deltas = st.sampled_from([-1.0, 0.0, 1.0])
unit = st.floats(-1.0, 1.0, allow_nan=False)
conditions = st.builds(ConditionEffects, deltas, unit, unit, st.floats(0.0, 1.0),
                       st.booleans())
item_effects = st.builds(ItemEffects, conditions, conditions,
                         st.one_of(st.none(), conditions), st.booleans())


@settings(max_examples=300, deadline=None)
@given(item_effects)
def test_item_role_is_always_a_known_label_and_deterministic(e: ItemEffects) -> None:
    first = item_role(e)
    assert first in LABELS
    assert item_role(e) == first
    assert item_roles(e)[0] == first
    roles = item_roles(e)
    assert list(roles) == sorted(roles, key=LABELS.index)  # priority order, no repeats
    assert len(set(roles)) == len(roles)


# ----------------------------------------------------------------------------- dataset level

N = 120


def shifted(mean: float, spread: float = 0.2, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return mean + spread * rng.standard_normal(N)


def zeros() -> np.ndarray:
    return np.zeros(N)


def base(remove: dict[str, np.ndarray] | None = None,
         duplicate: dict[str, np.ndarray] | None = None) -> dict[str, dict[str, np.ndarray]]:
    quiet = {"correctness": zeros(), "f1": zeros(), "conf_utility": zeros(),
             "divergence": zeros()}
    return {"remove": {**quiet, **(remove or {})}, "duplicate": {**quiet, **(duplicate or {})}}


def binary_deltas(share_hurt: float, share_helped: float) -> np.ndarray:
    n_hurt, n_helped = round(share_hurt * N), round(share_helped * N)
    return np.array([1.0] * n_hurt + [-1.0] * n_helped + [0.0] * (N - n_hurt - n_helped))


def test_dataset_clear_positive_shift_is_constructive() -> None:
    out = dataset_roles(base(remove={"correctness": binary_deltas(0.35, 0.05)}),
                        n_resamples=FAST)
    assert out.primary == "constructive"
    assert out.verdicts.constructive.holds is True
    assert out.verdicts.constructive.evidence["remove.correctness"].ci_low > 0


def test_dataset_clear_negative_shift_is_distractive() -> None:
    out = dataset_roles(base(remove={"correctness": binary_deltas(0.05, 0.35)}),
                        n_resamples=FAST)
    assert out.primary == "distractive"
    assert out.verdicts.constructive.holds is False


def test_dataset_zero_mean_correctness_with_confidence_shift_is_confidence_distorting() -> None:
    out = dataset_roles(base(duplicate={"correctness": binary_deltas(0.1, 0.1),
                                        "conf_utility": shifted(0.12, 0.1),
                                        "divergence": np.full(N, 0.05)}),
                        n_resamples=FAST)
    assert out.primary == "confidence-distorting"
    evidence = out.verdicts.confidence_distorting.evidence
    assert evidence["duplicate.conf_utility"].ci_low > 0
    assert evidence["duplicate.correctness"].ci_low <= 0 <= \
        evidence["duplicate.correctness"].ci_high


def test_dataset_all_zero_deltas_are_redundant() -> None:
    out = dataset_roles(base(), n_resamples=FAST)
    assert out.labels == ["redundant"]
    assert out.primary == "redundant"


def test_dataset_duplicate_divergence_above_the_bound_is_not_redundant() -> None:
    out = dataset_roles(base(duplicate={"divergence": np.full(N, 0.2)}), n_resamples=FAST)
    assert out.verdicts.redundant.holds is False
    assert out.primary == "neutral"


def test_dataset_corrective_is_not_decided() -> None:
    out = dataset_roles(base(), n_resamples=FAST)
    assert out.verdicts.corrective.holds is None


def test_dataset_without_duplicate_leaves_redundant_undecided() -> None:
    out = dataset_roles({"remove": {"correctness": zeros()}}, n_resamples=FAST)
    assert out.verdicts.redundant.holds is None
    assert out.verdicts.confidence_distorting.holds is None
    assert out.primary == "neutral"


def test_dataset_reports_every_condition_and_metric_and_is_json_serialisable() -> None:
    data = base()
    data["replace"] = {"correctness": binary_deltas(0.3, 0.0), "grounding": shifted(0.4)}
    out = dataset_roles(data, n_resamples=FAST)
    assert set(out.conditions) == {"remove", "duplicate", "replace"}
    assert set(out.conditions["replace"]) == {"correctness", "grounding"}
    assert out.conditions["replace"]["correctness"].mean == pytest.approx(0.3)
    assert "CI" in out.verdicts.constructive.reason
    assert "confidence-distorting" in json.loads(out.model_dump_json(by_alias=True))["verdicts"]


def test_dataset_uses_bootstrap_ci_with_default_resamples_and_seed() -> None:
    from cuer_agent.metrics.stats import bootstrap_ci

    corr = binary_deltas(0.2, 0.1)
    out = dataset_roles({"remove": {"correctness": corr}})
    lo, hi = bootstrap_ci(corr, n_resamples=5000, seed=42)
    stats = out.conditions["remove"]["correctness"]
    assert (stats.ci_low, stats.ci_high) == (lo, hi)
    assert out.settings.n_resamples == 5000
    assert out.settings.seed == 42


def test_dataset_needs_remove_correctness() -> None:
    with pytest.raises(ValueError, match="remove"):
        dataset_roles({"duplicate": {"correctness": zeros()}})


def test_dataset_rejects_arrays_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        dataset_roles({"remove": {"correctness": zeros(), "f1": np.zeros(3)}})


def test_dataset_rejects_nan_deltas() -> None:
    with pytest.raises(ValueError, match="finite"):
        dataset_roles({"remove": {"correctness": np.array([0.0, np.nan])}})


def test_dataset_rejects_empty_arrays() -> None:
    with pytest.raises(ValueError, match="no examples"):
        dataset_roles({"remove": {"correctness": np.array([])}})


def test_the_role_label_type_lists_every_label_in_order() -> None:
    from typing import get_args

    from cuer_agent.roles import LABELS, RoleLabel

    assert get_args(RoleLabel) == LABELS

"""Answer metrics (official HotpotQA rules), CUE-R axes, and statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cuer_agent.metrics import answer_scores, exact_match, f1_score, normalize_answer, soft_correct
from cuer_agent.metrics.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    mcnemar_exact,
    sign_flip_test,
)
from cuer_agent.metrics.utility import (
    DivergenceWeights,
    confidence_error,
    divergence,
    grounding,
    jaccard_distance,
)


@pytest.mark.parametrize("raw, normalized", [
    ("The Beatles", "beatles"),             # lowercase + article
    ("an apple a day", "apple day"),        # every article
    ("Theatre", "theatre"),                 # "the" inside a word stays
    ("U.S.A.", "usa"),                      # punctuation removed, not replaced by space
    ("rock-and-roll", "rockandroll"),
    ("  many   spaces\there ", "many spaces here"),
    ("A", ""),
    ("Éire", "éire"),                       # non-ASCII letters kept
])
def test_normalize_answer_follows_the_official_rules(raw: str, normalized: str) -> None:
    assert normalize_answer(raw) == normalized


def test_exact_match_is_after_normalization() -> None:
    assert exact_match("the Beatles!", "Beatles") == 1.0
    assert exact_match("Beatle", "Beatles") == 0.0


def test_f1_token_overlap() -> None:
    # pred "new york city" vs gold "new york": p = 2/3, r = 1 → f1 = 0.8
    assert f1_score("New York City", "New York") == pytest.approx(0.8)
    assert f1_score("Paris", "London") == 0.0


@pytest.mark.parametrize("pred, gold", [("yes", "no"), ("no", "yes"), ("yes", "yes sir"),
                                        ("noanswer", "paris"), ("paris", "noanswer")])
def test_f1_is_zero_when_a_yes_no_noanswer_side_differs(pred: str, gold: str) -> None:
    assert f1_score(pred, gold) == 0.0


def test_f1_of_identical_yes_is_one() -> None:
    assert f1_score("Yes", "yes") == 1.0


@pytest.mark.parametrize("pred, gold, expected", [
    ("Liezel Huber", "liezel huber", 1.0),       # EM
    ("yes", "Yes.", 1.0),                        # yes/no agreement
    ("no", "yes", 0.0),
    ("1,500", "1500", 1.0),                      # numeric equivalence
    ("3.50", "3.5", 1.0),
    ("about 42", "42", 1.0),
    ("Chief of Protocol of the United States", "Chief of Protocol", 0.0),  # f1 0.67
    ("New York City", "New York", 1.0),          # f1 0.8 reaches the threshold
    ("", "Paris", 0.0),
])
def test_soft_correctness_cases(pred: str, gold: str, expected: float) -> None:
    assert soft_correct(pred, gold) == expected


def test_scores_take_the_max_over_gold_aliases() -> None:
    scores = answer_scores("NYC", ["New York City", "NYC"])
    assert scores == {"em": 1.0, "f1": 1.0, "soft": 1.0}


@given(st.text(max_size=30), st.text(max_size=30))
def test_f1_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert f1_score(a, b) == pytest.approx(f1_score(b, a))
    assert 0.0 <= f1_score(a, b) <= 1.0


@given(st.text(max_size=30))
def test_exact_match_implies_full_f1_and_soft(a: str) -> None:
    if normalize_answer(a):
        assert f1_score(a, a) == 1.0 and soft_correct(a, a) == 1.0


def test_grounding_share_of_used_titles_in_gold() -> None:
    assert grounding(["A", "B", "C", "A"], {"A"}) == 0.5
    assert grounding([], {"A"}) == 0.0


def test_confidence_error_clamps_and_counts_missing_as_zero() -> None:
    assert confidence_error(1.4, 1.0) == 0.0
    assert confidence_error(-0.2, 0.0) == 0.0
    assert confidence_error(0.7, 0.0) == pytest.approx(0.7)
    assert confidence_error(None, 1.0) == 1.0


def test_divergence_paper_weights() -> None:
    # U={a,b}, U'={a}: d_J = 1/2; answers differ; |c - c'| = 0.5
    d = divergence(["a", "b"], "Paris", 0.9, ["a"], "London", 0.4)
    assert d == pytest.approx(0.5 * 0.5 + 0.3 + 0.2 * 0.5)


def test_divergence_of_identical_traces_is_zero_and_weights_apply() -> None:
    assert divergence(["a"], "The Paris", 0.5, ["a"], "paris", 0.5) == 0.0
    only_answer = DivergenceWeights(used=0.0, answer=1.0, confidence=0.0)
    assert divergence(["a"], "x", 0.1, ["b"], "y", 0.9, only_answer) == 1.0


def test_jaccard_distance_of_two_empty_sets_is_zero() -> None:
    assert jaccard_distance([], []) == 0.0


@given(st.lists(st.sampled_from("abcd"), max_size=4), st.lists(st.sampled_from("abcd"), max_size=4),
       st.floats(0, 1), st.floats(0, 1), st.booleans())
def test_divergence_is_within_zero_and_one(u: list[str], v: list[str], c: float, d: float,
                                           same: bool) -> None:
    assert 0.0 <= divergence(u, "x", c, v, "x" if same else "y", d) <= 1.0 + 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bootstrap_ci_matches_scipy_percentile_within_001(seed: int) -> None:
    x = np.random.default_rng(seed).random(200)
    ours = bootstrap_ci(x, n_resamples=5000, seed=42)
    ref = stats.bootstrap((x,), np.mean, n_resamples=5000, method="percentile",
                          rng=np.random.default_rng(seed + 100)).confidence_interval
    assert abs(ours[0] - ref.low) < 0.01 and abs(ours[1] - ref.high) < 0.01


def test_bootstrap_ci_is_seeded_and_stacks_metrics() -> None:
    m = np.random.default_rng(0).random((5, 50))
    both = bootstrap_ci(m)
    assert both.shape == (5, 2)
    assert np.allclose(both[2], bootstrap_ci(m[2]), rtol=0, atol=1e-12)
    assert np.array_equal(bootstrap_ci(m[0]), bootstrap_ci(m[0]))


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=40))
@settings(max_examples=50, deadline=None)
def test_bootstrap_ci_brackets_the_range_of_the_data(xs: list[float]) -> None:
    lo, hi = bootstrap_ci(xs, n_resamples=200)
    assert min(xs) - 1e-9 <= lo <= hi <= max(xs) + 1e-9


def test_cluster_bootstrap_is_wider_for_correlated_clusters() -> None:
    rng = np.random.default_rng(0)
    cluster_means = rng.random(20)
    values = np.repeat(cluster_means, 10)  # 10 identical outcomes per cluster
    clusters = np.repeat(np.arange(20), 10)
    plain = bootstrap_ci(values)
    clustered = cluster_bootstrap_ci(values, list(clusters))
    assert clustered[1] - clustered[0] > 2 * (plain[1] - plain[0])


def test_sign_flip_test_detects_a_consistent_shift_and_not_noise() -> None:
    assert sign_flip_test(np.full(30, 0.3)) < 0.001
    assert sign_flip_test(np.zeros(30)) == 1.0
    noise = np.random.default_rng(1).normal(0, 1, 30)
    assert sign_flip_test(noise) > 0.05


def test_sign_flip_test_of_one_pair_is_p_one() -> None:
    # a one-example study (n = 1) has one paired delta: both sign flips tie
    assert sign_flip_test([0.4]) == 1.0



def test_mcnemar_exact_on_discordant_pairs() -> None:
    # 6 lost, 0 gained: p = 2 * 0.5**6
    before = [1] * 6 + [0] * 4
    after = [0] * 6 + [0] * 4
    assert mcnemar_exact(before, after) == pytest.approx(2 * 0.5 ** 6)
    assert mcnemar_exact([1, 0], [1, 0]) == 1.0


def test_a_sub_query_that_is_the_question_again_repeats_it() -> None:
    from cuer_agent.metrics.answer import repeats_question

    question = "In which town was the founder of Brask Mills born?"
    assert repeats_question("in which town was the founder of Brask Mills born", question)
    assert not repeats_question("Who founded Brask Mills?", question)
    assert not repeats_question("", question)


def test_a_sub_query_that_names_nothing_of_the_question_shares_no_word() -> None:
    from cuer_agent.metrics.answer import shares_no_word

    question = "In which town was the founder of Brask Mills born?"
    assert shares_no_word("search", question)
    assert not shares_no_word("Who founded Brask Mills?", question)

"""What `evaluate` leads with: families of diagnosers, the headline's picks, ranked
caveats, and bounds printed with the digits their decision needs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_report import diagnoser, summary

from cuer_agent.metrics.stats import bound_digits
from cuer_agent.report._format import ci
from cuer_agent.report._plots import MEMBER_STYLES, exact_hop_families
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.evaluate.caveats import caveat, honest_caveats, ranked
from cuer_agent.studies.evaluate.headline import best_of, family, headline
from cuer_agent.studies.evaluate.summary_model import EvaluateResults
from cuer_agent.studies.propagation.summary_model import PropagationResults


def diag(acc: float | None, **declared: Any) -> DiagnoserSummary:
    """A diagnoser with exact-hop accuracy `acc` at depth 1 and pooled, on query_drift,
    and `declared` over the rest of test_report's diagnoser."""
    full = diagnoser(0.5)
    cell = {"acc": acc, "ci": [0.0, 1.0], "n": 10, "descriptive_only": False}
    return DiagnoserSummary.model_validate({
        **full, "exact_hop_acc": {**full["exact_hop_acc"], "mean": acc},
        "balanced": {**full["balanced"], "mean": acc},
        "by_depth": {"1": {**full["by_depth"]["1"], **cell}},
        "by_fault_depth": {"query_drift": {"1": cell}}, **declared})


def results(**parts: Any) -> EvaluateResults:
    """test_report's full summary without its caveats, `parts` replaced."""
    content = {k: v for k, v in summary().items() if k != "caveats"}
    return EvaluateResults.model_validate({**content, **parts})


def parse_failing_ledger(rate: float) -> dict[str, Any]:
    """test_report's evaluate ledger with `rate` of its read replies failing to parse."""
    ledger = summary()["ledger"]
    failed = round(rate * ledger["requests"])
    read = {**ledger["by_skill"]["read"], "parse_failures": failed, "parse_failure_rate": rate}
    return {**ledger, "parse_failures": failed, "parse_failure_rate": rate,
            "by_skill": {"read": read}}


def test_a_run_over_five_percent_parse_failures_gets_a_caveat_naming_the_skill() -> None:
    flagged = honest_caveats(results(ledger=parse_failing_ledger(0.12)), "llamacpp")
    quiet = honest_caveats(results(ledger=parse_failing_ledger(0.05)), "llamacpp")

    said = [c for c in flagged if "failed to parse" in c.text]
    assert len(said) == 1 and said[0].impact == 0.12
    assert "12% of the studies' skill replies" in said[0].text and "read: 12%" in said[0].text
    assert not [c for c in quiet if "failed to parse" in c.text]


def test_families_follow_what_a_diagnoser_declares() -> None:
    assert family(diag(0.5, control=True, uses_environment_oracle=True)) == "controls"
    assert family(diag(0.5, uses_environment_oracle=True)) == "oracle probes"
    assert family(diag(0.5, uses_gold_oracle=True, uses_gold=True)) == "oracle probes"
    assert family(diag(0.5, uses_gold=True)) == "reads gold"
    assert family(diag(0.5)) == "gold-free"


def test_the_best_of_a_family_is_its_highest_pooled_accuracy_ties_by_name() -> None:
    diagnosers = {"b": diag(0.6), "a": diag(0.6), "c": diag(0.9, uses_gold=True),
                  "d": diag(None)}
    assert best_of(diagnosers, "gold-free") == "a"
    assert best_of(diagnosers, "oracle probes") is None


def test_the_headline_sets_the_best_gold_free_beside_the_controls_and_the_oracle() -> None:
    diagnosers = {"x": diag(0.7), "trace-rule": diag(0.3, control=True),
                  "chance": diag(0.2, control=True),
                  "probe": diag(1.0, uses_environment_oracle=True)}
    agentic = summary()["agentic"]
    cell = {**agentic["faults"]["empty_retrieval"]["1"], "injected": 10, "effective": 9,
            "recovery_effective": 0.1, "recovery_effective_ci": [0.0, 0.4],
            "control": {"recovery": 0.0, "ci": [0.0, 0.3], "n": 9, "recovered": 0,
                        "same_run": 0}}
    head = headline(diagnosers, PropagationResults.model_validate(
        {**agentic, "faults": {"query_drift": {"1": cell}}}))
    assert head.columns == ("x", "trace-rule", "chance", "probe")
    [row] = head.rows
    assert (row.recovery.value, row.control.value, row.recovery.n) == (0.1, 0.0, 9)
    assert [row.diagnosers[n].value for n in head.columns] == [0.7, 0.3, 0.2, 1.0]


def test_caveats_rank_by_impact_keeping_the_order_of_equals() -> None:
    made = [caveat("a"), caveat("b", impact=0.2), caveat("c"), caveat("d", impact=0.5)]
    assert [c.text for c in ranked(made)] == ["d", "b", "a", "c"]


def test_a_caveat_is_said_once_with_every_diagnoser_it_concerns() -> None:
    below = {**diagnoser(0.4)["by_depth"]["1"], "acc": 0.4, "ci": [0.3, 0.5],
             "independence": 0.45, "beats_independence": False}
    diagnosers = {name: {**diagnoser(0.4), "by_depth": {"1": below}}
                  for name in ("p", "q", "r")}
    caveats = honest_caveats(results(diagnosers=diagnosers), "ollama")
    independence = [c for c in caveats if "independence baseline" in c.text]
    assert len(independence) == 1 and independence[0].concerns == ["p", "q", "r"]


@given(st.floats(min_value=-0.5, max_value=0.5, allow_nan=False, allow_subnormal=False))
def test_a_nonzero_bound_never_prints_as_zero(value: float) -> None:
    digits = bound_digits(value)
    if value != 0 and abs(value) >= 1e-8:
        assert round(value, digits) != 0


def test_an_interval_that_excludes_zero_shows_it() -> None:
    assert ci((0.000125, 0.021), sign=True) == "[+0.0001, +0.021]"
    assert ci((0.0, 0.021)) == "[0.000, 0.021]"


def test_a_family_never_draws_more_members_than_there_are_styles() -> None:
    members = [f"m{i}" for i in range(len(MEMBER_STYLES) + 2)]
    diagnosers = {m: diag(0.5) for m in members}
    drawn = exact_hop_families(diagnosers, {"gold-free": members})
    assert drawn is not None and drawn[1] == members[len(MEMBER_STYLES):]


def test_verify_without_an_effective_injection_says_so_instead_of_an_empty_list() -> None:
    verify = {**summary()["verify"], "detection": {}}
    said = [c.text for c in honest_caveats(results(verify=verify), "llamacpp")
            if c.text.startswith("VERIFY flags")]
    assert said == ["VERIFY flags 2.0% of clean hops (false alarms) and no injection took "
                    "effect to measure its detection."]

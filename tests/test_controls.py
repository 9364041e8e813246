"""The controls beside every diagnoser: trace-rule and the abstention baseline."""

from __future__ import annotations

from cuer_agent.diagnosers import DiagnosisView, get_diagnoser
from cuer_agent.metrics.attribution import Attribution
from cuer_agent.studies.diagnose.summary import abstention
from cuer_agent.trace import Evidence, HopAttempt, HopRecord, Trace

EV = (Evidence(id="a-p0-c0", title="A", text="A was directed by B."),)


def hop(n: int, *, support: str = "supported", retried: bool = False) -> HopRecord:
    earlier = (HopAttempt(hop=n, subquery="q", retrieved=(), support="unsupported"),)
    return HopRecord(hop=n, attempt=2 if retried else 1, subquery="q", retrieved=EV,
                     selected=("a-p0-c0",), finding="B", support=support,  # type: ignore[arg-type]
                     attempts=earlier if retried else ())


def rule(*hops: HopRecord, budget: int | None = 3) -> tuple[int, str]:
    trace = Trace(example_id="e", question="q", hops=hops, answer="B")
    d = get_diagnoser("trace-rule").diagnose(DiagnosisView(trace=trace, hop_budget=budget))
    return d.hop, d.stage


def test_trace_rule_names_the_first_hop_the_agent_retried() -> None:
    assert rule(hop(1), hop(2, retried=True), hop(3, retried=True)) == (2, "retrieval")


def test_trace_rule_names_the_first_hop_verify_found_unsupported() -> None:
    assert rule(hop(1), hop(2), hop(3, support="unsupported")) == (3, "retrieval")


def test_trace_rule_names_hop_n_plus_1_when_the_trace_stopped_before_its_budget() -> None:
    assert rule(hop(1), hop(2)) == (3, "answer")


def test_trace_rule_abstains_on_a_trace_that_flags_nothing() -> None:
    assert rule(hop(1), hop(2), hop(3)) == (0, "answer")


def test_without_a_known_budget_an_early_stop_is_not_seen() -> None:
    assert rule(hop(1), hop(2), budget=None) == (0, "answer")


def item(true_hop: int, pred_hop: int | None, n_hops: int = 3) -> Attribution:
    return Attribution(example_id=f"e{true_hop}{pred_hop}", fault="f", true_hop=true_hop,
                       true_stage="retrieval", n_hops=n_hops, pred_hop=pred_hop,
                       pred_stage="retrieval")


def test_abstention_scores_coverage_precision_and_a_random_hops_precision() -> None:
    items = [item(1, 1), item(2, 1), item(3, 0), item(2, None)]
    scores = abstention(items)
    assert scores.coverage == 0.5 and scores.named == 2
    assert scores.precision == 0.5
    assert scores.random_precision == round(1 / 3, 6)  # 1/n for every true hop in 1..n
    assert abstention([]).coverage is None


def test_a_random_hop_cannot_be_right_about_a_premature_stop() -> None:
    assert abstention([item(3, 1, n_hops=2)]).random_precision == 0.0

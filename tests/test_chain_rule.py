"""The `chain-rule` control: trace-rule, then the first hop whose sub-query drops the
previous finding (or, at hop 1, every entity of the question)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.diagnosers import DiagnosisView, get_diagnoser
from cuer_agent.diagnosers._base import default_diagnosers
from cuer_agent.diagnosers.chain_rule import carries
from cuer_agent.trace import Evidence, HopAttempt, HopRecord, Trace

QUESTION = "Who directed the film that starred Ada Lovelace?"
EV = (Evidence(id="a-p0-c0", title="A", text="A was directed by B."),)
CHAIN = (("Ada Lovelace film", "Analytical Engine"),
         ("director of Analytical Engine", "Charles Babbage"),
         ("birthplace of Charles Babbage", "London"))
"""(sub-query, finding) per hop: each sub-query carries the finding before it."""


def hop(n: int, subquery: str, finding: str, *, support: str = "supported",
        retried: bool = False) -> HopRecord:
    earlier = (HopAttempt(hop=n, subquery=subquery, support="unsupported"),)
    return HopRecord(hop=n, attempt=2 if retried else 1, subquery=subquery, retrieved=EV,
                     selected=("a-p0-c0",), finding=finding, support=support,  # type: ignore[arg-type]
                     attempts=earlier if retried else ())


def chain(*pairs: tuple[str, str]) -> tuple[HopRecord, ...]:
    return tuple(hop(n, q, f) for n, (q, f) in enumerate(pairs, start=1))


def blame(hops: tuple[HopRecord, ...], budget: int | None = 3,
          question: str = QUESTION) -> tuple[int, str]:
    trace = Trace(example_id="e", question=question, hops=hops, answer="x")
    d = get_diagnoser("chain-rule").diagnose(DiagnosisView(trace=trace, hop_budget=budget))
    return d.hop, d.stage


def test_a_retried_hop_wins_over_a_dropped_finding() -> None:
    hops = chain(*CHAIN)
    dropped = hop(2, "who directed it", "Charles Babbage")
    assert blame((hops[0], dropped, hop(3, *CHAIN[2], retried=True))) == (3, "retrieval")


def test_a_hop_verify_found_unsupported_wins_over_a_dropped_finding() -> None:
    hops = chain(*CHAIN)
    dropped = hop(2, "who directed it", "Charles Babbage", support="unsupported")
    assert blame((hops[0], dropped, hops[2])) == (2, "retrieval")


def test_a_hop_2_sub_query_that_drops_hop_1s_finding_is_blamed_at_the_tool() -> None:
    hops = chain(*CHAIN)
    assert blame((hops[0], hop(2, "director of the Engine", "Charles Babbage"), hops[2])
                 ) == (2, "tool")


def test_carrying_is_read_on_a_hops_first_attempt() -> None:
    hops = chain(*CHAIN)
    first = HopAttempt(hop=2, subquery="who directed it", support="unsupported")
    trace = Trace(example_id="e", question=QUESTION, hops=(
        hops[0], hops[1].model_copy(update={"attempt": 2, "attempts": (first,)})))
    assert not carries(trace, 1)  # its retry carried the finding; its first ask did not
    assert carries(trace.model_copy(update={"hops": hops[:2]}), 1)


def test_a_hop_1_naming_no_entity_of_the_question_is_blamed_at_the_tool() -> None:
    hops = chain(*CHAIN)
    assert blame((hop(1, "famous film director", "Analytical Engine"), *hops[1:])
                 ) == (1, "tool")


def test_a_question_with_no_capitalised_word_lets_hop_1_carry_vacuously() -> None:
    hops = chain(*CHAIN)
    assert blame((hop(1, "famous film", "Analytical Engine"), *hops[1:]),
                 question="who directed the film?") == (0, "answer")


def test_a_finding_with_no_content_word_carries_vacuously() -> None:
    hops = chain(*CHAIN)
    assert blame((hops[0], hops[1].model_copy(update={"finding": "of the"}),
                  hop(3, "birthplace", "London"))) == (0, "answer")


def test_a_chain_that_carries_everything_under_its_budget_names_hop_n_plus_1() -> None:
    assert blame(chain(*CHAIN[:2]), budget=3) == (3, "answer")


def test_a_chain_that_carries_everything_at_its_budget_abstains() -> None:
    assert blame(chain(*CHAIN), budget=3) == (0, "answer")


def test_without_a_known_budget_a_carried_chain_abstains() -> None:
    assert blame(chain(*CHAIN[:2]), budget=None) == (0, "answer")


def test_it_is_a_control_in_the_default_selection_right_after_trace_rule() -> None:
    names = default_diagnosers()
    assert names[names.index("trace-rule") + 1] == "chain-rule"
    assert getattr(get_diagnoser("chain-rule"), "control", False)


WORDS = st.sampled_from(["Ada", "Lovelace", "film", "Engine", "London", "the", "of", "Babbage"])
TEXT = st.lists(WORDS, max_size=4).map(" ".join)


@given(st.lists(st.tuples(TEXT, TEXT, st.sampled_from(["supported", "unsupported"]),
                          st.booleans()), max_size=5),
       st.one_of(st.none(), st.integers(1, 6)), TEXT)
def test_the_blamed_hop_is_always_in_0_to_n_plus_1(
        spec: list[tuple[str, str, str, bool]], budget: int | None, question: str) -> None:
    hops = tuple(hop(n, q, f, support=s, retried=r)
                 for n, (q, f, s, r) in enumerate(spec, start=1))
    assert 0 <= blame(hops, budget, question)[0] <= len(hops) + 1

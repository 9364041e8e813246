"""The labelling rule of natural failures (`gold-chain-walk@2`): where a clean run that
ended wrong first went wrong, placed on the gold chain."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.data import Example, HopGold, Passage
from cuer_agent.interventions.facts import PoolFacts
from cuer_agent.studies.natural.chain import NO_STEPS, GoldStep, gold_chain, paragraph_key
from cuer_agent.studies.natural.rule import (
    NO_SUPPORT,
    FirstError,
    HopVerdict,
    Unplaced,
    contains,
    first_error,
    hop_verdicts,
)
from cuer_agent.trace import Evidence, HopAttempt, HopRecord, Trace, evidence_id

PAINTING, PAINTER = "Vessa Allegory", "Orin Calde"
CHAIN = (GoldStep(("Orin Calde",), frozenset({paragraph_key(evidence_id(PAINTING, 0))}),
                  PAINTING),
         GoldStep(("Marrow Bay",), frozenset({paragraph_key(evidence_id(PAINTER, 3))}),
                  PAINTER))


def item(title: str, paragraph: int, text: str = "") -> Evidence:
    return Evidence(id=evidence_id(title, paragraph), title=title, text=text or title)


def hop(n: int, finding: str, *seen: Evidence, earlier: tuple[HopAttempt, ...] = ()
        ) -> HopRecord:
    return HopRecord(hop=n, subquery=f"q{n}", retrieved=seen, selected=(), finding=finding,
                     attempts=earlier)


def trace(*hops: HopRecord, answer: str = "Lisk") -> Trace:
    return Trace(example_id="ex", question="Where did the painter of the Vessa Allegory die?",
                 hops=hops, answer=answer)


def placed(t: Trace) -> FirstError:
    label = first_error(t, CHAIN)
    assert isinstance(label, FirstError), label
    return label


def test_a_wrong_finding_with_its_passage_in_view_is_a_read_error() -> None:
    label = placed(trace(hop(1, "Renaissance", item(PAINTING, 0))))
    assert (label.hop, label.stage, label.kind) == (1, "read", "read")


def test_a_wrong_finding_without_its_passage_in_view_is_a_retrieval_error() -> None:
    label = placed(trace(hop(1, "Orin Calde", item(PAINTING, 0)),
                         hop(2, "Lisk", item("Lisk", 0))))
    assert (label.hop, label.stage) == (2, "retrieval")


def test_an_earlier_attempt_that_retrieved_the_passage_makes_it_a_read_error() -> None:
    first = HopAttempt(hop=1, subquery="q", retrieved=(item(PAINTING, 0),), finding="")
    label = placed(trace(hop(1, "Renaissance", item("Other", 0), earlier=(first,))))
    assert label.stage == "read"


def test_only_the_last_attempts_finding_counts() -> None:
    first = HopAttempt(hop=1, subquery="q", retrieved=(item(PAINTING, 0),), finding=PAINTER)
    assert placed(trace(hop(1, "Renaissance", item(PAINTING, 0), earlier=(first,)))).hop == 1


def test_stopping_with_steps_left_is_hop_n_plus_one() -> None:
    label = placed(trace(hop(1, "Orin Calde", item(PAINTING, 0))))
    assert (label.hop, label.stage, label.kind) == (2, "answer", "stopped-early")


def test_every_step_resolved_and_a_wrong_answer_is_the_answer_step() -> None:
    label = placed(trace(hop(1, "Orin Calde"), hop(2, "Marrow Bay"), answer="Calde"))
    assert (label.hop, label.stage, label.kind) == (0, "answer", "answer")


def test_hops_after_every_step_resolved_are_no_errors() -> None:
    label = placed(trace(hop(1, "Orin Calde"), hop(2, "Marrow Bay"), hop(3, "nothing")))
    assert label.hop == 0


def test_a_finding_of_a_later_step_resolves_up_to_it() -> None:
    label = placed(trace(hop(1, "Marrow Bay"), hop(2, "nothing")))
    assert label.hop == 0


def test_repeating_a_resolved_step_is_an_error() -> None:
    label = placed(trace(hop(1, "Orin Calde"), hop(2, "Orin Calde", item(PAINTER, 3))))
    assert (label.hop, label.stage) == (2, "read")


def test_a_passage_of_another_id_scheme_counts_by_title_and_answer() -> None:
    foreign = Evidence(id="doc-17", title=PAINTING, text="Painted by Orin Calde in 1502.")
    assert placed(trace(hop(1, "1502", foreign))).stage == "read"


def test_the_supporting_title_without_the_answer_is_not_the_passage() -> None:
    foreign = Evidence(id="doc-17", title=PAINTING, text="Kept in a northern museum.")
    assert placed(trace(hop(1, "museum", foreign))).stage == "retrieval"


def test_a_step_without_a_known_supporting_passage_is_not_placed() -> None:
    chain = (GoldStep(("Orin Calde",), frozenset(), None),)
    assert first_error(trace(hop(1, "Renaissance")), chain) == Unplaced(NO_SUPPORT)


def test_containment_is_by_whole_normalised_words() -> None:
    assert contains("the painter Orin Calde, of Vessa", "Orin Calde")
    assert contains("Marrow  bay.", "marrow bay")
    assert not contains("Orin Caldera", "Orin Calde")
    assert not contains("anything", "")


def test_the_final_answers_aliases_count_for_the_last_step_only() -> None:
    example = Example(id="m", dataset="musique", question="?", answer="Marrow Bay",
                      aliases=("the Bay",),
                      hops=(HopGold(answer="Orin Calde", support_title=PAINTING,
                                    support_index=0),
                            HopGold(answer="Marrow Bay", support_title=PAINTER,
                                    support_index=3)))
    chain = gold_chain(example, PoolFacts())
    assert not isinstance(chain, str)
    assert [step.answers for step in chain] == [("Orin Calde",), ("Marrow Bay", "the Bay")]
    assert chain[1].support == {paragraph_key(evidence_id(PAINTER, 3))}


def test_a_data_set_without_per_step_answers_has_no_chain() -> None:
    example = Example(id="h", dataset="hotpotqa", question="?", answer="x",
                      passages=(Passage(title="A", text="a"),), supporting_titles=("A",))
    assert gold_chain(example, PoolFacts()) == NO_STEPS


@given(findings=st.lists(st.sampled_from(["Orin Calde", "Marrow Bay", "Lisk", ""]),
                         max_size=5),
       seen=st.lists(st.booleans(), min_size=5, max_size=5))
def test_the_first_error_hop_is_within_zero_to_n_plus_one(findings: list[str],
                                                           seen: list[bool]) -> None:
    hops = [hop(i, f, *([item(PAINTING, 0), item(PAINTER, 3)] if s else []))
            for i, (f, s) in enumerate(zip(findings, seen, strict=False), start=1)]
    label = first_error(trace(*hops), CHAIN)
    assert isinstance(label, FirstError)
    assert 0 <= label.hop <= len(hops) + 1
    assert (label.stage == "answer") == (label.hop in (0, len(hops) + 1))


def test_a_hop_after_an_error_that_leaves_the_step_open_is_wrong_too() -> None:
    verdicts = hop_verdicts(trace(hop(1, "Renaissance", item(PAINTING, 0)),
                                  hop(2, "Florence", item("Florence", 0))), CHAIN)
    assert verdicts == (HopVerdict(1, False, 1, "read"), HopVerdict(2, False, 1, "retrieval"))


def test_a_hop_that_resolves_the_open_step_after_an_error_is_right() -> None:
    verdicts = hop_verdicts(trace(hop(1, "Renaissance"), hop(2, "Orin Calde"),
                                  hop(3, "Marrow Bay")), CHAIN)
    assert [(v.right, v.step) for v in verdicts] == [(False, 1), (True, 1), (True, 2)]


def test_hops_after_every_step_resolved_are_right_and_resolve_no_step() -> None:
    verdicts = hop_verdicts(trace(hop(1, "Marrow Bay"), hop(2, "nothing")), CHAIN)
    assert verdicts == (HopVerdict(1, True, 2, None), HopVerdict(2, True, None, None))


def test_a_wrong_hop_whose_step_has_no_known_passage_has_no_stage() -> None:
    chain = (CHAIN[0], GoldStep(("Marrow Bay",), frozenset(), None))
    verdicts = hop_verdicts(trace(hop(1, "Orin Calde"), hop(2, "Lisk")), chain)
    assert verdicts[1] == HopVerdict(2, False, 2, None)


@given(findings=st.lists(st.sampled_from(["Orin Calde", "Marrow Bay", "Lisk", ""]),
                         max_size=5),
       seen=st.lists(st.booleans(), min_size=5, max_size=5))
def test_the_first_wrong_verdict_is_the_first_error(findings: list[str],
                                                     seen: list[bool]) -> None:
    hops = [hop(i, f, *([item(PAINTING, 0), item(PAINTER, 3)] if s else []))
            for i, (f, s) in enumerate(zip(findings, seen, strict=False), start=1)]
    verdicts = hop_verdicts(trace(*hops), CHAIN)
    label = placed(trace(*hops))
    wrong = [v for v in verdicts if not v.right]
    assert [v.hop for v in verdicts] == list(range(1, len(hops) + 1))
    if wrong:
        assert (label.hop, label.stage) == (wrong[0].hop, wrong[0].stage)
    else:
        assert label.hop in (0, len(hops) + 1)


def test_a_labelled_failure_carries_every_hops_verdict_and_its_wrong_hops() -> None:
    from cuer_agent.studies.natural.labels import CleanRun, label_run

    example = Example(id="ex", dataset="musique", question="?", answer="Marrow Bay",
                      hops=(HopGold(answer="Orin Calde", support_title=PAINTING,
                                    support_index=0),
                            HopGold(answer="Marrow Bay", support_title=PAINTER,
                                    support_index=3)))
    run = trace(hop(1, "Renaissance", item(PAINTING, 0)), hop(2, "Florence"))
    label = label_run(CleanRun("t", "r", run, example), PoolFacts(), 0.8).label
    assert label is not None and label.hop_verdicts is not None
    assert [(v.hop, v.right, v.stage) for v in label.hop_verdicts] == [
        (1, False, "read"), (2, False, "retrieval")]
    assert label.wrong_hops() == [1, 2]


def test_a_trace_no_example_matches_is_not_counted_a_failure() -> None:
    from cuer_agent.studies.natural.labels import NO_EXAMPLE, CleanRun, label_run

    labelled = label_run(CleanRun("t", "r", trace(hop(1, "x")), None), PoolFacts(), 0.8)
    assert (labelled.label, labelled.reason, labelled.failed) == (None, NO_EXAMPLE, False)

"""The gold-free `consistency` diagnoser: each check, the decision, and the skill door."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.diagnosers import DiagnosisView, get_diagnoser
from cuer_agent.diagnosers._checks import check
from cuer_agent.diagnosers.consistency import CHECKS, decide, traced_hops
from cuer_agent.llm.backends import SkillClient, SkillResult, make_backend
from cuer_agent.llm.skills import CheckName, CheckRequest, CheckResponse
from cuer_agent.trace import Evidence, HopAttempt, HopRecord, Trace

QUESTION = "What is the population of the city where Ada Vel was born?"


def item(ident: str, title: str, text: str) -> Evidence:
    return Evidence(id=ident, title=title, text=text)


ADA = item("ada-p0", "Ada Vel", "Ada Vel is a writer. Ada Vel was born in Port Mira.")
NEW_MIRA = item("mi-p0", "New Mira", "New Mira has 7,000 inhabitants.")
"""Another entity with a similar name: what a misread or a failed retrieval reads."""
MIRA = item("mira-p0", "Port Mira",
            "Port Mira is a harbour town. Port Mira has a population of 52,000.")


def hop(n: int, subquery: str, evidence: tuple[Evidence, ...], finding: str,
        selected: str, **kw: Any) -> HopRecord:
    return HopRecord(hop=n, subquery=subquery, retrieved=evidence, selected=(selected,),
                     finding=finding, support="supported", **kw)


def clean_hops() -> list[HopRecord]:
    return [hop(1, QUESTION, (ADA,), "Port Mira", "ada-p0"),
            hop(2, "Port Mira population", (MIRA,), "52,000", "mira-p0")]


def diagnose(hops: list[HopRecord], answer: str = "52,000",
             question: str = QUESTION) -> tuple[int, str, str]:
    trace = Trace(example_id="e", question=question, hops=tuple(hops), answer=answer)
    d = get_diagnoser("consistency", skills=SkillClient(make_backend("extractive")))
    made = d.diagnose(DiagnosisView(trace=trace))
    return made.hop, made.stage, made.cause


def test_a_consistent_trace_gets_no_blame() -> None:
    assert diagnose(clean_hops())[:2] == (0, "none")


def test_a_sub_query_about_an_entity_no_evidence_gave_is_blamed_on_the_tool() -> None:
    drifted = item("lo-p0", "Lorn Bay", "Lorn Bay is a port. Lorn Bay has 9,100 inhabitants.")
    hops = [clean_hops()[0], hop(2, "Lorn Bay population", (drifted,), "9,100", "lo-p0")]
    found, stage, cause = diagnose(hops, answer="9,100")
    assert (found, stage) == (2, "tool") and cause.startswith("carry")


def test_two_items_giving_one_subject_two_values_for_one_relation_conflict() -> None:
    other = item("ada-p1", "Ada Vel", "Ada Vel was born in Tarn Vale.")
    hops = [hop(1, QUESTION, (ADA, other), "Port Mira", "ada-p0"), clean_hops()[1]]
    found, stage, cause = diagnose(hops)
    assert (found, stage) == (1, "retrieval") and cause.startswith("conflict")


def test_a_namesake_mentioned_beside_the_subject_is_no_conflict() -> None:
    namesake = item("ada-p1", "Ada Vel", "Ada Vel is often confused with Ada Velmont.")
    hops = [hop(1, QUESTION, (ADA, namesake), "Port Mira", "ada-p0"), clean_hops()[1]]
    assert diagnose(hops)[:2] == (0, "none")


def test_a_finding_stated_about_another_entity_is_unsupported() -> None:
    hops = [clean_hops()[0],
            hop(2, "Port Mira population", (MIRA, NEW_MIRA), "7,000", "mi-p0")]
    found, _, cause = diagnose(hops, answer="7,000")
    assert found == 2 and cause.startswith("support")


def test_a_finding_the_next_hop_finds_nothing_about_is_where_the_failure_started() -> None:
    hops = [clean_hops()[0], hop(2, "Port Mira population", (NEW_MIRA,), "7,000", "mi-p0")]
    found, stage, cause = diagnose(hops, answer="7,000")
    assert (found, stage) == (1, "retrieval") and cause.startswith("bridge")


VEL = item("vel-p0", "Bo Vel", "Bo Vel (born 3 May 1950) is a Mirish film director.")
"""A person's article: a date and a word that describes him, where a place was asked."""
WHERE = "Where was the director of Quiet Hills born?"
HILLS = item("hi-p0", "Quiet Hills", "Quiet Hills is a 1990 film directed by Bo Vel.")


def where_hops(finding: str) -> list[HopRecord]:
    return [hop(1, WHERE, (HILLS,), "Bo Vel", "hi-p0"),
            hop(2, "Bo Vel born", (VEL,), finding, "vel-p0")]


@pytest.mark.parametrize("finding", ["3 May", "Mirish"])
def test_a_date_or_a_describing_word_found_where_a_place_was_asked_is_the_wrong_kind(
        finding: str) -> None:
    found, _, cause = diagnose(where_hops(finding), answer=finding, question=WHERE)
    assert found == 2 and cause.startswith("kind")


def ask(name: CheckName, question: str, hops: list[HopRecord], answer: str) -> CheckResponse:
    """The rule checker's reply to one check of a trace."""
    trace = Trace(example_id="e", question=question, hops=tuple(hops), answer=answer)
    return check(CheckRequest(check=name, question=question, hops=traced_hops(trace),
                              answer=answer))


def test_a_name_found_where_a_place_was_asked_passes_the_kind_check() -> None:
    reply = ask("kind", WHERE, where_hops("Port Mira"), "Port Mira")
    assert reply.consistent and not reply.reason


def test_the_question_does_not_judge_a_last_hop_whose_finding_is_not_the_answer() -> None:
    hops = [hop(1, "Bo Vel nationality", (VEL,), "Mirish", "vel-p0")]
    reply = ask("kind", "Who is older, Bo Vel or Ada Vel?", hops, "Ada Vel")
    assert reply.consistent and reply.reason.startswith("abstains")


BO = item("bo-p0", "Bo Vel", "Bo Anton Vel (1901-1950) was a painter. His son Ivo Vel ...")


def test_a_hop_that_finds_the_entity_it_asks_about_echoes_it() -> None:
    question = "Who is the father of Bo Vel?"
    hops = [hop(1, question, (BO,), "Bo Anton Vel", "bo-p0")]
    assert ask("echo", question, hops, "Bo Anton Vel").hops == [1]


def test_a_name_cited_as_a_source_after_the_finding_is_no_echo() -> None:
    question = "Who is the son of Bo Anton Vel?"
    hops = [hop(1, question, (BO,), "Ivo Vel, according to Bo Anton Vel.", "bo-p0")]
    reply = ask("echo", question, hops, "Ivo Vel")
    assert reply.consistent and not reply.hops


def test_a_hop_that_finds_the_entity_it_asks_about_with_its_dates_echoes_it() -> None:
    question = "Who is the father of Bo Vel?"
    hops = [hop(1, question, (BO,), "Bo Anton Vel (3 May 1901 - 1950)", "bo-p0")]
    assert ask("echo", question, hops, "Bo Anton Vel").hops == [1]


SENTENCE = "Quiet Hills is a 1990 film directed by Bo Vel."
"""A reader that answers in a sentence of its passage: the entity asked about comes first,
the value later."""


def test_echo_abstains_on_a_sentence_that_names_the_entity_asked_about_and_another() -> None:
    hops = [hop(1, "Quiet Hills director", (HILLS,), SENTENCE, "hi-p0")]
    reply = ask("echo", WHERE, hops, SENTENCE)
    assert reply.consistent and reply.reason.startswith("abstains")


def test_bridge_abstains_on_a_finding_that_names_several_entities() -> None:
    hops = [hop(1, "Quiet Hills director", (HILLS,), SENTENCE, "hi-p0"),
            hop(2, f"{SENTENCE} born", (HILLS,), SENTENCE, "hi-p0")]
    reply = ask("bridge", WHERE, hops, SENTENCE)
    assert reply.consistent and reply.reason.startswith("abstains")


def test_echo_abstains_on_a_question_that_offers_a_choice() -> None:
    hops = [hop(1, "Bo Vel born", (BO,), "Bo Anton Vel", "bo-p0")]
    reply = ask("echo", "Who was born first, Bo Vel or Ada Vel?", hops, "Bo Anton Vel")
    assert reply.consistent and reply.reason.startswith("abstains")


def test_a_nameless_finding_in_a_reader_s_own_words_is_stated_by_its_numerals() -> None:
    hops = [clean_hops()[0],
            hop(2, "Port Mira population", (MIRA,), "The passages point to 52,000.", "mira-p0")]
    assert ask("support", QUESTION, hops, "52,000").consistent


def test_a_sub_query_opening_with_a_lone_preposition_names_no_new_entity() -> None:
    hops = [clean_hops()[0], hop(2, "Along with Port Mira, which towns have a population?",
                                 (MIRA,), "52,000", "mira-p0")]
    assert ask("carry", QUESTION, hops, "52,000").consistent


def test_a_paraphrased_finding_of_a_trace_without_selection_is_supported() -> None:
    paraphrased = HopRecord(hop=1, subquery="Ada Vel birthplace", retrieved=(ADA,),
                            finding="born in Port Mira", support="supported")
    hops = [paraphrased, hop(2, "Port Mira population", (MIRA,), "52,000", "mira-p0")]
    assert diagnose(hops)[:2] == (0, "none")


def test_an_ungrounded_answer_of_a_trace_that_stopped_early_is_blamed_on_hop_n_plus_1() -> None:
    found, stage, cause = diagnose(PART_ASKED, answer="Tarn Vale")
    assert (found, stage) == (2, "answer") and "complete" in cause


PART_ASKED = [hop(1, "Where was Ada Vel born?", (ADA,), "Port Mira", "ada-p0")]
"""One hop that asked a part of the question (where Ada Vel was born) and no other."""

UNREAD = {"complete": CheckResponse(consistent=False, hops=[3], reason="no hop asked it")}


def test_a_part_of_the_question_left_unread_alone_decides_nothing_after_several_hops() -> None:
    trace = Trace(example_id="e", question=QUESTION, hops=tuple(clean_hops()), answer="52,000")
    assert decide(trace, UNREAD)[:2] == (0, "none")


def test_one_hop_that_asked_the_question_whole_and_read_part_of_it_is_blamed() -> None:
    found, stage, cause = diagnose(clean_hops()[:1], answer="Port Mira")
    assert (found, stage) == (1, "retrieval") and cause.startswith("complete")


def test_one_hop_that_asked_a_part_and_answered_stopped_early() -> None:
    found, stage, cause = diagnose(PART_ASKED, answer="Port Mira")
    assert (found, stage) == (2, "answer") and "stopped early" in cause


def test_a_retry_alone_decides_nothing() -> None:
    retried = clean_hops()
    first = HopAttempt(hop=2, subquery="Port Mira people", retrieved=(), support="unsupported")
    retried[1] = retried[1].model_copy(update={"attempt": 2, "attempts": (first,)})
    assert diagnose(retried)[:2] == (0, "none")


def test_a_retry_before_a_strong_inconsistency_is_where_the_failure_started() -> None:
    first = HopAttempt(hop=1, subquery=QUESTION, retrieved=(), support="unsupported")
    hops = [clean_hops()[0].model_copy(update={"attempt": 2, "attempts": (first,)}),
            hop(2, "Port Mira population", (MIRA, NEW_MIRA), "7,000", "mi-p0")]
    found, stage, cause = diagnose(hops, answer="7,000")
    assert (found, stage) == (1, "retrieval") and "own signal at hop 1" in cause


class RecordingSkills:
    """A skill client that answers every check "consistent" except the ones it is told."""

    def __init__(self, failing: dict[str, list[int]], unparsed: tuple[str, ...] = ()) -> None:
        self.failing, self.unparsed = failing, unparsed
        self.requests: list[CheckRequest] = []

    def __call__(self, skill: str, request: CheckRequest) -> SkillResult:
        assert skill == "check"
        self.requests.append(request)
        if request.check in self.unparsed:
            return SkillResult(skill, None, "parse_failure", "not JSON")
        hops = self.failing.get(request.check, [])
        reply = CheckResponse(consistent=not hops, hops=hops, reason=f"{request.check} said so")
        return SkillResult(skill, reply, "ok")


def run_with(skills: RecordingSkills) -> Any:
    trace = Trace(example_id="e", question=QUESTION, hops=tuple(clean_hops()), answer="52,000")
    return get_diagnoser("consistency", skills=skills).diagnose(DiagnosisView(trace=trace))


def test_every_check_is_one_typed_skill_request_and_the_deciding_one_is_named() -> None:
    skills = RecordingSkills({"conflict": [2]})
    made = run_with(skills)
    assert [r.check for r in skills.requests] == list(CHECKS)
    assert made.hop == 2 and made.cause == "conflict: conflict said so"
    assert made.cost.calls == len(CHECKS)


def test_a_check_whose_reply_does_not_parse_is_skipped_and_named() -> None:
    made = run_with(RecordingSkills({}, unparsed=("carry",)))
    assert made.hop == 0 and "unparsed: carry" in made.cause


@given(st.dictionaries(st.sampled_from(CHECKS), st.lists(st.integers(0, 6), max_size=3)),
       st.integers(1, 4))
def test_the_decision_always_names_a_hop_of_the_trace_or_n_plus_1(
        failed: dict[str, list[int]], n: int) -> None:
    trace = Trace(example_id="e", question=QUESTION, answer="x",
                  hops=tuple(hop(i, "q", (ADA,), "Port Mira", "ada-p0") for i in range(1, n + 1)))
    replies = {name: CheckResponse(consistent=False, hops=hops) for name, hops in failed.items()}
    found, stage, _ = decide(trace, replies)
    assert 0 <= found <= n + 1
    if not failed:
        assert (found, stage) == (0, "none")

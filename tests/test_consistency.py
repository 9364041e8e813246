"""The gold-free `consistency` diagnoser: each check, the decision, and the skill door."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.diagnosers import DiagnosisView, get_diagnoser
from cuer_agent.diagnosers.consistency import CHECKS, decide
from cuer_agent.llm.backends import SkillClient, SkillResult, make_backend
from cuer_agent.llm.skills import CheckRequest, CheckResponse
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


def diagnose(hops: list[HopRecord], answer: str = "52,000") -> tuple[int, str, str]:
    trace = Trace(example_id="e", question=QUESTION, hops=tuple(hops), answer=answer)
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


def test_a_paraphrased_finding_of_a_trace_without_selection_is_supported() -> None:
    paraphrased = HopRecord(hop=1, subquery="Ada Vel birthplace", retrieved=(ADA,),
                            finding="born in Port Mira", support="supported")
    hops = [paraphrased, hop(2, "Port Mira population", (MIRA,), "52,000", "mira-p0")]
    assert diagnose(hops)[:2] == (0, "none")


def test_an_ungrounded_answer_of_a_trace_that_stopped_early_is_blamed_on_hop_n_plus_1() -> None:
    found, stage, cause = diagnose(clean_hops()[:1], answer="Tarn Vale")
    assert (found, stage) == (2, "answer") and "complete" in cause


def test_a_part_of_the_question_left_unread_alone_decides_nothing() -> None:
    assert diagnose(clean_hops()[:1], answer="Port Mira")[:2] == (0, "none")


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

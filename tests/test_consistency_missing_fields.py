"""`consistency` on traces that record less than ours: a field a foreign trace leaves out
(a hop's note, a document's text, the selection, a sub-query) makes the checks
that need it abstain; it never makes a correct run look broken."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.diagnosers import DiagnosisView, get_diagnoser
from cuer_agent.diagnosers._checks import check
from cuer_agent.diagnosers.consistency import traced_hops
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.llm.skills import CheckName, CheckRequest
from cuer_agent.trace import Evidence, HopRecord, Trace

QUESTION = "What is the population of the city where Ada Vel was born?"
ADA = Evidence(id="ada-p0", title="Ada Vel",
               text="Ada Vel is a writer. Ada Vel was born in Port Mira.")
MIRA = Evidence(id="mira-p0", title="Port Mira",
                text="Port Mira is a harbour town. Port Mira has a population of 52,000.")


def foreign_hops() -> list[HopRecord]:
    """A correct two-hop run as a foreign trace records it: no selection of its own (all
    it retrieved was in view), no VERIFY verdict, findings in the reader's own words."""
    return [HopRecord(hop=1, subquery="Where was Ada Vel born?", retrieved=(ADA,),
                      selected=("ada-p0",), finding="Ada Vel was born in Port Mira."),
            HopRecord(hop=2, subquery="What is the population of Port Mira?",
                      retrieved=(MIRA,), selected=("mira-p0",),
                      finding="Port Mira has about 52,000 people.")]


def trace_of(hops: list[HopRecord], answer: str = "52,000") -> Trace:
    return Trace(example_id="e", question=QUESTION, hops=tuple(hops), answer=answer)


def blame(trace: Trace) -> tuple[int, str, str]:
    made = get_diagnoser("consistency", skills=SkillClient(make_backend("extractive"))) \
        .diagnose(DiagnosisView(trace=trace))
    return made.hop, made.stage, made.cause


def run_check(name: CheckName, trace: Trace) -> tuple[bool, list[int], str]:
    reply = check(CheckRequest(check=name, question=trace.question, hops=traced_hops(trace),
                               answer=trace.answer))
    return reply.consistent, reply.hops, reply.reason


def without_note(hops: list[HopRecord], n: int) -> list[HopRecord]:
    return [h.model_copy(update={"finding": ""}) if h.hop == n else h for h in hops]


def test_the_foreign_shaped_correct_run_gets_no_blame() -> None:
    assert blame(trace_of(foreign_hops()))[:2] == (0, "none")


def test_grounded_abstains_when_a_hop_records_no_note() -> None:
    # The answer may be what the silent hop found: "none of the findings" cannot be told.
    consistent, _, reason = run_check("grounded", trace_of(without_note(foreign_hops(), 2),
                                                           answer="52 thousand"))
    assert consistent and reason.startswith("abstains: hop 2 records no finding")


def test_complete_abstains_when_a_hop_records_no_note() -> None:
    consistent, _, reason = run_check("complete", trace_of(without_note(foreign_hops(), 2)))
    assert consistent and reason.startswith("abstains: hop 2 records no finding")


def test_a_blank_finding_the_agent_judged_unsupported_is_a_recorded_nothing() -> None:
    # Our agent's VERIFY said "unsupported" and it found nothing: that is recorded, and
    # an answer none of the other findings gives is still ungrounded.
    hops = [h.model_copy(update={"support": "supported"}) for h in foreign_hops()]
    hops[1] = hops[1].model_copy(update={"finding": "", "support": "unsupported"})
    consistent, hops_named, _ = run_check("grounded", trace_of(hops, answer="Lorn Bay"))
    assert not consistent and hops_named == [0]


def test_carry_stops_at_a_hop_that_records_neither_its_note_nor_what_it_read() -> None:
    hops = without_note(foreign_hops(), 1)
    hops[0] = hops[0].model_copy(update={"retrieved": (ADA.model_copy(update={"text": ""}),)})
    consistent, _, reason = run_check("carry", trace_of(hops))
    assert consistent and reason.startswith("abstains: hop 1 records neither")


def test_support_reads_no_document_whose_text_the_trace_left_out() -> None:
    hops = foreign_hops()
    hops[1] = hops[1].model_copy(update={"retrieved": (MIRA.model_copy(update={"text": ""}),)})
    consistent, _, _ = run_check("support", trace_of(hops))
    assert consistent


def strip(hops: list[HopRecord], hop: HopRecord, what: frozenset[str]) -> HopRecord:
    update: dict[str, object] = {}
    if "note" in what:
        update["finding"] = ""
    if "text" in what:
        update["retrieved"] = tuple(e.model_copy(update={"text": ""}) for e in hop.retrieved)
    if "selection" in what:
        update["selected"] = ()
    if "subquery" in what:
        update["subquery"] = ""
    return hop.model_copy(update=update)


FIELDS = st.frozensets(st.sampled_from(["note", "text", "selection", "subquery"]))


@settings(max_examples=60, deadline=None)
@given(first=FIELDS, second=FIELDS)
def test_no_missing_field_makes_a_correct_run_blamed(
        first: frozenset[str], second: frozenset[str]) -> None:
    hops = foreign_hops()
    stripped = [strip(hops, hops[0], first), strip(hops, hops[1], second)]
    hop, stage, cause = blame(trace_of(stripped))
    assert (hop, stage) == (0, "none"), cause

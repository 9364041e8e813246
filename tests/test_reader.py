"""The extractive reader: an unfitted word table, VERIFY's rules, and the retry planner."""

from __future__ import annotations

from pathlib import Path

from cuer_agent.data import _synthetic_phrasing as phr
from cuer_agent.data import _synthetic_text as gen
from cuer_agent.llm import _questions as questions
from cuer_agent.llm import _reading as reading
from cuer_agent.llm import _text as tx
from cuer_agent.llm import extractive as ex
from cuer_agent.llm.skills import EvidenceView, HopView, PlanRequest, ReadRequest

QUORIN = EvidenceView(id="a-p0-c0", title="Quorin Rising",
                      text="Quorin Rising is a drama film. It was directed by Pell Varnick.")


def read(subquery: str, *evidence: EvidenceView, question: str = "Who directed Quorin Rising?",
         history: tuple[HopView, ...] = ()) -> ex.ReadResponse:
    return ex.read(ReadRequest(question=question, hop=len(history) + 1, subquery=subquery,
                               evidence=evidence, history=history))


# --- the word table holds general English, not the generator's phrasing -------------------

def test_word_table_has_none_of_the_generator_fitted_entries() -> None:
    fitted = {"contains", "contain", "live", "lives", "started", "based", "situated", "lies",
              "attended"}
    assert not fitted & set(reading.RELATION_STEMS)


def test_every_word_group_states_its_reason() -> None:
    for group, reason, words in reading.RELATION_GROUPS:
        assert group and reason.strip() and words.split()


def test_reader_has_no_hatnote_pattern_of_the_generator() -> None:
    source = "".join(Path(m.__file__).read_text(encoding="utf-8")
                     for m in (ex, reading, questions))
    for hatnote in gen.SIBLING_FILLERS:
        phrase = hatnote.split("{sib}")[0].split("{s}")[-1].strip()
        assert phrase not in source, phrase


def test_generator_has_three_surface_forms_per_relation_and_fact_type() -> None:
    for relation, forms in gen.FACTS.items():
        assert len(forms) >= 3, relation
    for relation, forms in phr.QUESTIONS.items():
        assert len(forms) >= 3, relation
    for relation, forms in phr.NOUN_PHRASES.items():
        assert len(forms) >= 3, relation


# --- reading -------------------------------------------------------------------------------

def test_a_negated_sentence_states_no_fact_to_extract() -> None:
    hatnote = EvidenceView(id="b-p1-c0", title="Quorin Rising",
                           text="Quorin Rising is not to be confused with The Quorin Letters.")
    assert tx.negated(hatnote.text) and tx.negated("The premise is false.")
    assert not tx.negated("Quorin Rising is often confused with The Quorin Letters.")
    assert read("Quorin Rising", hatnote).finding == ""


def test_a_supported_finding_comes_from_the_named_passage() -> None:
    reply = read("Who directed Quorin Rising?", QUORIN)
    assert (reply.finding, reply.support, reply.selected_ids) == (
        "Pell Varnick", "supported", ["a-p0-c0"])


def test_verify_flags_a_sentence_about_another_entity_than_the_subquery_names() -> None:
    sibling = EvidenceView(id="d-p3-c0", title="The Quorin Letters",
                           text="The Quorin Letters was directed by Ansa Varnick.")
    reply = read("Who directed Quorin Rising?", sibling)
    assert reply.finding == "Ansa Varnick" and reply.support == "unsupported"


def test_verify_calls_a_relation_it_cannot_read_partial_not_unsupported() -> None:
    helmed = EvidenceView(id="a-p1-c0", title="Quorin Rising",
                          text="Quorin Rising was helmed by Pell Varnick.")
    reply = read("Who directed Quorin Rising?", helmed)
    assert (reply.finding, reply.support) == ("Pell Varnick", "partial")


def test_verify_judges_the_selected_sentence_alone() -> None:
    """Another passage in view, even one that disagrees about the same entity, does not
    change VERIFY's verdict: it decides from the sub-query, the finding and the selected
    text (it tests no property of how faults are made, such as two items sharing a title)."""
    other = EvidenceView(id="a-p9-c0", title="Quorin Rising",
                         text="Quorin Rising was directed by Brem Falk.")
    alone = read("Who directed Quorin Rising?", QUORIN)
    beside = read("Who directed Quorin Rising?", QUORIN, other)
    assert beside.support == alone.support == "supported"
    assert len(beside.selected_ids) == 1


def test_a_hop_that_matches_no_relation_word_uses_up_the_nearest_one() -> None:
    question = "What is the population of the country that contains the city where X Y was born?"
    hop1 = HopView(hop=1, subquery=question, finding="Tolmere",
                   reason="X Y: X Y was born in Tolmere.")
    hop2 = HopView(hop=2, subquery="Tolmere population contains", finding="Varenia",
                   reason="Tolmere: Tolmere lies in Varenia.")  # "lies" is no known word
    assert questions.residual(question, (hop1,)) == {"peopl", "conta"}
    assert questions.residual(question, (hop1, hop2)) == {"peopl"}


# --- retry planning ---------------------------------------------------------------------

def plan(question: str, history: tuple[HopView, ...] = (),
         retry: tuple[HopView, ...] = ()) -> ex.PlanResponse:
    return ex.plan(PlanRequest(question=question, hop=len(history) + 1, hop_budget=3,
                               history=history, retry=retry))


def test_retry_asks_as_planned_when_the_failed_attempt_asked_something_else() -> None:
    question = "Where was the director of Quorin Rising born?"
    drifted = HopView(hop=1, subquery="Where was the director of Port Tolmere born?")
    reply = plan(question, retry=(drifted,))
    assert reply.subquery == question and reply.reason.startswith("retry:")


def test_retry_never_repeats_a_failed_sub_query() -> None:
    question = "Where was the director of Quorin Rising born?"
    tried = [question]
    for _ in range(5):
        reply = plan(question, retry=tuple(HopView(hop=1, subquery=q) for q in tried))
        if reply.action == "answer":
            break
        tried.append(reply.subquery)
    bags = [frozenset(tx.content_words(q)) for q in tried]
    assert len(set(bags)) == len(bags) >= 3
    assert reply.action == "answer"  # out of other ways to ask


def test_retry_says_the_relation_another_way() -> None:
    question = "In which city was the director of Quorin Rising born?"
    hop1 = HopView(hop=1, subquery=question, finding="Pell Varnick",
                   reason="Quorin Rising: Quorin Rising was directed by Pell Varnick.")
    planned = plan(question, history=(hop1,)).subquery
    reply = plan(question, history=(hop1,), retry=(HopView(hop=2, subquery=planned),))
    assert planned == "Pell Varnick born"
    assert reply.subquery == "Pell Varnick birth"  # the same relation, another word

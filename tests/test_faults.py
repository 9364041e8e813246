"""Structural faults at hop h: registry, effects, off-topic draws, skips, determinism."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.data._example import Example
from cuer_agent.data.synthetic import build_world, make_questions
from cuer_agent.interventions import (
    CorpusItem,
    FaultInput,
    FaultOutcome,
    fault_names,
    get_fault,
)
from cuer_agent.interventions._text import topic
from cuer_agent.interventions.drift_faults import (
    SKIP_NO_BRIDGE,
    SKIP_NO_OTHER_ENTITY,
    SKIP_NO_OTHER_RELATION,
)
from cuer_agent.interventions.facts import PoolFacts, SyntheticFacts
from cuer_agent.interventions.structural_faults import withheld_ids
from cuer_agent.retrieval import BM25Retriever, chunk_passages, tokenize
from cuer_agent.trace import Evidence, evidence_id

STRUCTURAL = {
    "empty_retrieval": ("retrieval", "retrieve"),
    "irrelevant_evidence": ("retrieval", "retrieve"),
    "query_drift": ("tool", "plan"),
    "bridge_dropped": ("tool", "plan"),
    "entity_swap": ("tool", "plan"),
    "relation_swap": ("tool", "plan"),
    "conflicting_evidence": ("retrieval", "retrieve"),
    "stale_evidence": ("retrieval", "retrieve"),
    "early_termination": ("answer", "read"),
}
EVIDENCE_FAULTS = ("empty_retrieval", "irrelevant_evidence", "conflicting_evidence",
                   "stale_evidence")
MISLEADING = ("conflicting_evidence", "stale_evidence")


# --- a small synthetic world -------------------------------------------------------------

SIZE = 300


@cache
def world() -> tuple[list[CorpusItem], BM25Retriever, list[Example]]:
    w = build_world(seed=0, size=SIZE)
    chunks = chunk_passages(w.passages)
    corpus = [CorpusItem(c.id, c.title, c.text) for c in chunks]
    return corpus, BM25Retriever(chunks), make_questions(w, 6, hops=3, seed=0)


FACTS = SyntheticFacts(0, SIZE, (1 / 3, 1 / 3, 1 / 3))


def make_input(example: int = 0, hop: int = 1, seed: int = 0, **changes: Any) -> FaultInput:
    """Hop `hop` of a question, asked with its gold sub-question; the hop selected the
    retrieved passages that state its fact (as a clean hop reading it would)."""
    corpus, retriever, examples = world()
    ex = examples[example]
    sub = ex.hops[hop - 1].question
    evidence = retriever.retrieve(sub, 5)
    fact = FACTS.fact(ex, hop)
    assert fact is not None
    selected = tuple(e.id for e in evidence if e.id in fact.passage_ids)[:1]
    inp = FaultInput(example_id=ex.id, question=ex.question, hop=hop, subquery=sub,
                     evidence=evidence,
                     later_subqueries=tuple(h.question for h in ex.hops[hop:]),
                     corpus=corpus, seed=seed, gold_answers=(ex.answer,),
                     score=retriever.score_text, search=search, known_ids=retriever.ids,
                     max_paragraph=retriever.max_paragraph, k=5, selected=selected,
                     finding=ex.hops[hop - 1].answer or "", fact=fact, facts=FACTS)
    return replace(inp, **changes)


def search(query: str, k: int) -> list[Evidence]:
    return world()[1].retrieve(query, k)


REAL_ID = re.compile(r"[0-9a-f]{12}-c\d+")


def assert_looks_retrieved(inp: FaultInput, evidence: Sequence[Evidence]) -> None:
    """As the retriever would return it: real-form ids, the retriever's own scores for
    the sub-query, ordered by (-score, id) and ranked 1..n, no longer than k."""
    assert_ranked(evidence)
    assert all(REAL_ID.fullmatch(e.id) for e in evidence)
    for e in evidence:
        assert e.score == pytest.approx(world()[1].score_text(inp.subquery, e.title,
                                                                 e.text), rel=1e-5)
    assert evidence == sorted(evidence, key=lambda e: (-e.score, e.id))
    assert len(evidence) <= (inp.k or len(inp.evidence))


def apply(name: str, inp: FaultInput) -> FaultOutcome:
    return get_fault(name).apply(inp)


def words(text: str) -> set[str]:
    return set(tokenize(text))


def assert_ranked(evidence: Sequence[Evidence]) -> None:
    assert [e.rank for e in evidence] == list(range(1, len(evidence) + 1))
    assert len({e.id for e in evidence}) == len(evidence)


def quorin(**changes: Any) -> FaultInput:
    """The paper's running example, over the synthetic corpus (no gold fact known)."""
    corpus, _, _ = world()
    evidence = [Evidence(id="q1", title="Quorin Rising",
                         text="Quorin Rising is a 1987 drama film. It was directed by Pell "
                         "Varnick.", rank=1, score=9.5),
                Evidence(id="q2", title="The Quorin Letters",
                         text="The Quorin Letters is a novel by Ansa Varnick.", rank=2,
                         score=4.0)]
    inp = FaultInput(example_id="ex-q", question="Who directed Quorin Rising?", hop=1,
                     subquery="Who directed Quorin Rising?", evidence=evidence,
                     later_subqueries=(), corpus=corpus, seed=0, selected=("q1",))
    return replace(inp, **changes)


# --- registry ----------------------------------------------------------------------------

def test_registry_lists_the_faults_with_stage_and_boundary() -> None:
    assert set(STRUCTURAL) <= set(fault_names())
    for name, (stage, boundary) in STRUCTURAL.items():
        spec = get_fault(name)
        assert (spec.name, spec.stage, spec.boundary) == (name, stage, boundary)


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_record_names_fault_hop_stage_and_boundary(name: str) -> None:
    record = apply(name, make_input(hop=2)).record
    assert record.record_id == f"{record.example_id}/{name}@2"
    assert (record.condition, record.hop) == (name, 2)
    assert (record.params["stage"], record.params["boundary"]) == STRUCTURAL[name]


# --- empty retrieval / early termination -------------------------------------------------

def test_early_termination_forces_an_answer_from_earlier_hops() -> None:
    out = apply("early_termination", make_input(hop=2))
    assert out.force_answer and out.evidence is None and out.subquery is None
    assert out.record.params["answer_from_hops"] == 1


# --- withholding: empty and irrelevant evidence ---------------------------------------------

def test_withheld_are_the_fact_passages_the_hop_read() -> None:
    inp = make_input()
    assert withheld_ids(inp) == inp.selected
    assert set(inp.selected) <= set(inp.fact.passage_ids)


def test_without_a_selected_fact_passage_every_fact_passage_in_view_is_withheld() -> None:
    inp = make_input(selected=())
    in_view = [e.id for e in inp.evidence]
    assert withheld_ids(inp) == tuple(i for i in in_view if i in inp.fact.passage_ids)


def test_without_a_gold_fact_the_selected_items_are_withheld() -> None:
    inp = quorin()
    assert withheld_ids(inp) == ("q1",)


@pytest.mark.parametrize("name", ["empty_retrieval", "irrelevant_evidence"])
def test_withholding_skips_when_no_fact_passage_is_in_view(name: str) -> None:
    inp = make_input()
    others = [e for e in inp.evidence if e.id not in inp.fact.passage_ids]
    out = apply(name, replace(inp, evidence=others, selected=()))
    assert out.record.skipped == "fact not in view"


def test_empty_retrieval_withholds_the_fact_and_blanks_the_faulted_query() -> None:
    inp = make_input()
    out = apply("empty_retrieval", inp)
    assert out.evidence == []
    assert out.corpus is not None and out.corpus.withheld == set(inp.selected)
    assert out.corpus.view(search, inp.score, inp.subquery, 5) == []
    asked_again = out.corpus.view(search, inp.score, "Who made " + inp.subquery, 5)
    assert asked_again and not {e.id for e in asked_again} & set(inp.selected)
    assert out.record.target_ids == inp.selected
    assert out.record.params["redundancy"] == inp.fact.redundancy


def test_irrelevant_evidence_shows_what_the_retriever_finds_without_the_fact() -> None:
    inp = make_input()
    out = apply("irrelevant_evidence", inp)
    evidence = out.evidence or []
    assert_looks_retrieved(inp, evidence)
    assert not {e.id for e in evidence} & set(inp.selected)
    expected = [e for e in search(inp.subquery, 10) if e.id not in inp.selected][:5]
    assert [e.id for e in evidence] == [e.id for e in expected]
    assert set(out.record.new_ids) == {e.id for e in evidence} - {e.id for e in
                                                                       inp.evidence}


def test_irrelevant_evidence_keeps_the_facts_other_statements() -> None:
    """Only what the hop read is withheld: a fact stated in several passages can still
    be found (here, among the retriever's next results)."""
    for example in range(6):
        for hop in (1, 2, 3):
            inp = make_input(example, hop)
            if inp.fact.redundancy < 2:
                continue
            out = apply("irrelevant_evidence", inp)
            others = set(inp.fact.passage_ids) - set(inp.selected)
            assert out.corpus is not None and not others & out.corpus.withheld
            return
    pytest.fail("no fact of redundancy >= 2 in the small world")


# --- query drift -------------------------------------------------------------------------

def test_query_drift_keeps_the_question_form() -> None:
    out = apply("query_drift", quorin())
    title = out.record.params["drift_title"]
    assert out.subquery == f"Who directed {title}?"
    assert out.record.params["original_subquery"] == "Who directed Quorin Rising?"
    assert out.record.params["drifted_subquery"] == out.subquery
    assert out.record.params["replaced_span"] == "Quorin Rising"


@pytest.mark.parametrize("example, hop", [(0, 1), (1, 2), (3, 3)])
def test_query_drift_moves_to_an_off_topic_corpus_title(example: int, hop: int) -> None:
    inp = make_input(example, hop)
    out = apply("query_drift", inp)
    params = out.record.params
    source = next(c for c in inp.corpus if c.id == params["drift_source_id"])
    assert params["drift_title"] == source.title
    assert words(source.title + " " + source.text).isdisjoint(words(inp.question))
    assert params["replaced_span"] not in (out.subquery or "")
    assert out.subquery == inp.subquery.replace(params["replaced_span"], source.title)


def test_query_drift_without_capitals_replaces_the_longest_content_run() -> None:
    out = apply("query_drift", quorin(subquery="director of quorin rising"))
    params = out.record.params
    assert params["strategy"] == "content_run" and params["replaced_span"] == "quorin rising"
    assert out.subquery == f"director of {params['drift_title']}"


def test_query_drift_skips_without_an_off_topic_passage() -> None:
    corpus = [CorpusItem("c1", "Quorin Rising", "A film directed by Pell Varnick.")]
    out = apply("query_drift", quorin(corpus=corpus))
    assert out.record.skipped == "no off-topic passage" and out.subquery is None


def test_empty_subquery_is_skipped() -> None:
    out = apply("query_drift", quorin(subquery=" ? "))
    assert out.record.skipped == "empty sub-query"


# --- conflicting and stale evidence ------------------------------------------------------

# --- drift as agents drift (drift_faults) ------------------------------------------------

def test_bridge_dropped_asks_about_the_questions_entity_instead_of_the_bridge() -> None:
    inp = make_input(hop=2)
    out = apply("bridge_dropped", inp)
    asked, _ = topic(inp.question)
    span, _ = topic(inp.subquery)
    assert asked is not None and span is not None and out.subquery is not None
    assert asked.text in out.subquery and span.text not in out.subquery
    assert out.record.params["drifted_subquery"] == out.subquery


def test_bridge_dropped_skips_at_the_first_hop_where_no_bridge_was_found() -> None:
    assert apply("bridge_dropped", make_input(hop=1)).record.skipped == SKIP_NO_BRIDGE


def test_entity_swap_asks_about_another_title_in_view_never_the_facts() -> None:
    inp = make_input(hop=1)
    out = apply("entity_swap", inp)
    assert out.subquery is not None
    title = out.record.params["drift_title"]
    assert title in {" ".join(ev.title.split()) for ev in inp.evidence}
    assert inp.fact is not None
    assert title not in {ev.title for ev in inp.evidence if ev.id in inp.fact.passage_ids}


def test_entity_swap_skips_when_its_evidence_shows_no_other_entity() -> None:
    inp = make_input(hop=1)
    only = [ev for ev in inp.evidence if inp.fact and ev.id in inp.fact.passage_ids]
    out = apply("entity_swap", replace(inp, evidence=only))
    assert out.record.skipped == SKIP_NO_OTHER_ENTITY


def test_relation_swap_keeps_the_entity_in_a_later_hops_frame() -> None:
    inp = make_input(hop=1)
    out = apply("relation_swap", inp)
    span, _ = topic(inp.subquery)
    assert span is not None and out.subquery is not None
    assert span.text in out.subquery and out.subquery != inp.subquery
    later_words = set().union(*(words(s) for s in inp.later_subqueries))
    assert (words(out.subquery) - words(span.text)) <= later_words


def test_relation_swap_skips_at_the_last_hop_with_no_later_frame() -> None:
    out = apply("relation_swap", make_input(hop=1, later_subqueries=()))
    assert out.record.skipped == SKIP_NO_OTHER_RELATION


@pytest.mark.parametrize("name", ["bridge_dropped", "entity_swap", "relation_swap"])
def test_a_drift_is_the_same_for_the_same_seed(name: str) -> None:
    assert apply(name, make_input(hop=2)) == apply(name, make_input(hop=2))


def injected(out: FaultOutcome) -> Evidence:
    (new_id,) = out.record.new_ids
    assert out.corpus is not None
    return next(e for e in out.corpus.added if e.id == new_id)


@cache
def world_words() -> frozenset[str]:
    """Every word any real passage of the small world uses."""
    return frozenset(w for item in world()[0] for w in tokenize(f"{item.title} {item.text}"))


@pytest.mark.parametrize("name", MISLEADING)
@pytest.mark.parametrize("example, hop", [(0, 1), (1, 2), (2, 3), (4, 1)])
def test_a_contradicting_passage_is_written_by_the_world(name: str, example: int,
                                                        hop: int) -> None:
    """Same title as the fact's subject, the fact stated with another value, words the
    world's real passages use, an id of the form its article's next paragraph gets."""
    inp = make_input(example, hop)
    out = apply(name, inp)
    item = injected(out)
    params = out.record.params
    assert item.title == inp.fact.title
    assert params["strategy"] == "world" and params["value"] != params["original_value"]
    assert params["original_value"] == inp.fact.value
    assert set(params["contradicts"]) <= set(inp.fact.passage_ids)  # the statements in view
    assert params["value"] in item.text and inp.fact.value not in item.text
    assert set(tokenize(item.text)) - world_words() <= set(tokenize(params["value"]))
    assert REAL_ID.fullmatch(item.id) and item.id not in inp.known_ids
    assert any(item.id == evidence_id(item.title, p) for p in range(100))  # of its title
    assert out.record.provenance[item.id] == f"world:{name.split('_')[0]}"


def test_conflicting_evidence_takes_a_family_siblings_value() -> None:
    inp = make_input(0, 1)
    w = FACTS.world
    entity = w.id_of(inp.fact.title)
    siblings = {w.answer(s, inp.fact.relation) for s in w.siblings(entity)}
    value = apply("conflicting_evidence", inp).record.params["value"]
    assert value in siblings - {inp.fact.value}


def test_the_added_passage_is_ranked_by_the_retriever_for_every_query() -> None:
    inp = make_input()
    out = apply("conflicting_evidence", inp)
    assert out.corpus is not None
    assert_looks_retrieved(inp, out.evidence or [])
    item = injected(out)
    for query in (inp.subquery, item.title):
        view = out.corpus.view(search, inp.score, query, 5)
        assert_ranked(view)
        shown = next((e for e in view if e.id == item.id), None)
        if shown is not None:
            assert shown.score == pytest.approx(inp.score(query, item.title,
                                                             item.text))


def test_without_a_world_the_contradicting_passage_is_a_certified_edit() -> None:
    inp = quorin(search=search, score=world()[1].score_text, gold_answers=("Pell Varnick",),
                 distractor_answers=("Ysolde Farrant",), facts=PoolFacts())
    out = apply("conflicting_evidence", inp)
    item = injected(out)
    params = out.record.params
    assert params["strategy"] == "edit:answer_fact"
    assert params["original_value"] == "Pell Varnick" and params["value"] == "Ysolde Farrant"
    assert item.text == inp.evidence[0].text.replace("Pell Varnick", "Ysolde Farrant")
    assert item.title == "Quorin Rising" and out.record.provenance[item.id] == "q1"


@pytest.mark.parametrize("name", EVIDENCE_FAULTS)
def test_evidence_faults_skip_empty_evidence(name: str) -> None:
    out = apply(name, make_input(evidence=[]))
    assert out.record.skipped == "empty evidence" and out.evidence is None


# --- determinism, seeds, purity ----------------------------------------------------------

def outcome_key(out: FaultOutcome) -> tuple:
    return (out.record.model_dump_json(), out.evidence, out.subquery, out.force_answer)


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_faults_are_deterministic(name: str) -> None:
    assert outcome_key(apply(name, make_input(1, 2))) == outcome_key(
        apply(name, make_input(1, 2)))


@pytest.mark.parametrize("name", ["query_drift", "conflicting_evidence",
                                  "stale_evidence"])
def test_faults_depend_on_the_seed(name: str) -> None:
    outcomes = {apply(name, make_input(1, 2, seed=s)).record.model_dump_json()
                for s in range(6)}
    assert len(outcomes) > 1


def test_a_config_naming_false_premise_gets_conflicting_evidence() -> None:
    from cuer_agent.config import PropagationConfig

    config = PropagationConfig(faults=("false_premise", "stale_evidence"))
    assert config.faults == ("conflicting_evidence", "stale_evidence")


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_faults_do_not_mutate_their_input(name: str) -> None:
    inp = make_input(2, 1)
    evidence, corpus = copy.deepcopy(list(inp.evidence)), list(inp.corpus)
    apply(name, inp)
    assert list(inp.evidence) == evidence and list(inp.corpus) == corpus


# --- property: random inputs -------------------------------------------------------------

WORD = st.one_of(
    st.sampled_from(["Who", "directed", "Quorin", "Rising", "the", "of", "The", "was", "in",
                     "1987", "98,660", "3.5", "Tolmere", "Bay", "born", "is", "?", "Was",
                     "When", "and", "'s", "A", "History"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8))
TEXT = st.lists(WORD, max_size=12).map(" ".join)
ITEM = st.builds(CorpusItem, id=st.text(max_size=4), title=TEXT, text=TEXT)


@st.composite
def fault_inputs(draw: st.DrawFn) -> FaultInput:
    n = draw(st.integers(0, 6))
    evidence = [Evidence(id=f"e{i}", title=draw(TEXT), text=draw(TEXT), rank=i + 1,
                         score=draw(st.floats(0, 50))) for i in range(n)]
    return FaultInput(example_id=draw(st.text(max_size=5)), question=draw(TEXT),
                      hop=draw(st.integers(1, 4)), subquery=draw(TEXT), evidence=evidence,
                      later_subqueries=draw(st.lists(TEXT, max_size=2)),
                      corpus=draw(st.lists(ITEM, max_size=12)), seed=draw(st.integers(0, 9)),
                      gold_answers=draw(st.lists(TEXT, max_size=2)))


@settings(max_examples=100, deadline=None)
@given(fault_inputs())
def test_random_inputs_never_raise_and_give_unique_ids_ranked_1_to_n(inp: FaultInput) -> None:
    for name in STRUCTURAL:
        out = apply(name, inp)
        if out.applied and out.evidence is not None:
            assert_ranked(out.evidence)
        if not out.applied:
            assert out.evidence is None and out.subquery is None and not out.force_answer

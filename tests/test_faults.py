"""Structural faults at hop h: registry, effects, off-topic draws, skips, determinism."""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import Any, overload

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
from cuer_agent.interventions._record import seeded_rng
from cuer_agent.interventions._text import capitalized_spans, topic
from cuer_agent.interventions.misleading_faults import (
    STALE_TOP_K,
    _facts,
    _premise_forms,
    shift_number,
)
from cuer_agent.retrieval import BM25Retriever, chunk_passages, tokenize

STRUCTURAL = {
    "empty_retrieval": ("retrieval", "retrieve"),
    "irrelevant_evidence": ("retrieval", "retrieve"),
    "query_drift": ("tool", "plan"),
    "false_premise": ("retrieval", "retrieve"),
    "stale_evidence": ("retrieval", "retrieve"),
    "early_termination": ("answer", "read"),
}
EVIDENCE_FAULTS = ("irrelevant_evidence", "false_premise", "stale_evidence")


# --- a small synthetic world -------------------------------------------------------------

@cache
def world() -> tuple[list[CorpusItem], BM25Retriever, list[Example]]:
    w = build_world(seed=0, size=300)
    chunks = chunk_passages(w.passages)
    corpus = [CorpusItem(c.id, c.title, c.text) for c in chunks]
    return corpus, BM25Retriever(chunks), make_questions(w, 6, hops=3, seed=0)


def make_input(example: int = 0, hop: int = 1, seed: int = 0, **changes: Any) -> FaultInput:
    corpus, retriever, examples = world()
    ex = examples[example]
    sub = ex.hops[hop - 1].question
    evidence = [e.model_dump(mode="json") for e in retriever.retrieve(sub, 5)]
    inp = FaultInput(example_id=ex.id, question=ex.question, hop=hop, subquery=sub,
                     evidence=evidence,
                     later_subqueries=tuple(h.question for h in ex.hops[hop:]),
                     corpus=corpus, seed=seed, gold_answers=(ex.answer,),
                     score=retriever.score_text, search=search, known_ids=retriever.ids,
                     max_paragraph=retriever.max_paragraph, k=5)
    return replace(inp, **changes)


def search(query: str, k: int) -> list[dict]:
    return [e.model_dump(mode="json") for e in world()[1].retrieve(query, k)]


REAL_ID = re.compile(r"[0-9a-f]{8}-p\d+-c\d+")


def assert_looks_retrieved(inp: FaultInput, evidence: Sequence[dict]) -> None:
    """As the retriever would return it: real-form ids, the retriever's own scores for
    the sub-query, ordered by (-score, id) and ranked 1..n, no longer than the input."""
    assert_ranked(evidence)
    assert all(REAL_ID.fullmatch(e["id"]) for e in evidence)
    for e in evidence:
        assert e["score"] == pytest.approx(world()[1].score_text(inp.subquery, e["title"],
                                                                 e["text"]), rel=1e-5)
    assert evidence == sorted(evidence, key=lambda e: (-e["score"], e["id"]))
    assert len(evidence) <= max(len(inp.evidence), 1)


def apply(name: str, inp: FaultInput) -> FaultOutcome:
    return get_fault(name).apply(inp)


def words(text: str) -> set[str]:
    return set(tokenize(text))


def assert_ranked(evidence: Sequence[dict]) -> None:
    assert [e["rank"] for e in evidence] == list(range(1, len(evidence) + 1))
    assert len({e["id"] for e in evidence}) == len(evidence)


def quorin(**changes: Any) -> FaultInput:
    """The paper's running example, over the synthetic corpus."""
    corpus, _, _ = world()
    evidence = [{"id": "q1", "title": "Quorin Rising",
                 "text": "Quorin Rising is a 1987 drama film. It was directed by Pell Varnick.",
                 "rank": 1, "score": 9.5},
                {"id": "q2", "title": "The Quorin Letters",
                 "text": "The Quorin Letters is a novel by Ansa Varnick.", "rank": 2,
                 "score": 4.0}]
    inp = FaultInput(example_id="ex-q", question="Who directed Quorin Rising?", hop=1,
                     subquery="Who directed Quorin Rising?", evidence=evidence,
                     later_subqueries=(), corpus=corpus, seed=0)
    return replace(inp, **changes)


# --- registry ----------------------------------------------------------------------------

def test_registry_lists_the_six_faults_with_stage_and_boundary() -> None:
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

def test_empty_retrieval_empties_the_evidence() -> None:
    inp = make_input()
    out = apply("empty_retrieval", inp)
    assert out.applied and out.evidence == []
    assert out.record.target_ids == tuple(e["id"] for e in inp.evidence)


def test_empty_retrieval_applies_to_empty_evidence() -> None:
    out = apply("empty_retrieval", make_input(evidence=[]))
    assert out.applied and out.evidence == []


def test_early_termination_forces_an_answer_from_earlier_hops() -> None:
    out = apply("early_termination", make_input(hop=3))
    assert out.applied and out.force_answer
    assert out.evidence is None and out.subquery is None
    assert out.record.params["answer_from_hops"] == 2


# --- irrelevant evidence -----------------------------------------------------------------

def test_irrelevant_evidence_replaces_every_item_with_a_scored_corpus_passage() -> None:
    inp = make_input()
    out = apply("irrelevant_evidence", inp)
    corpus = {c.id: c for c in inp.corpus}
    assert out.applied and out.evidence is not None
    assert 1 <= len(out.evidence) <= len(inp.evidence)
    assert_looks_retrieved(inp, out.evidence)
    for item in out.evidence:
        source = corpus[item["id"]]
        assert (item["title"], item["text"]) == (source.title, source.text)
        assert item["score"] > 0  # retrievable for the sub-query, as real bad retrieval is
    assert set(out.record.new_ids) == {e["id"] for e in out.evidence}
    assert set(out.record.provenance) == set(out.record.new_ids)


def name_words(*texts: str) -> set[str]:
    return {w for t in texts for span in capitalized_spans(t) for w in words(span.text)}


@pytest.mark.parametrize("example, hop", [(0, 1), (0, 3), (2, 2), (5, 1)])
def test_irrelevant_passages_mention_no_name_of_the_question_or_its_subqueries(
        example: int, hop: int) -> None:
    inp = make_input(example, hop)
    out = apply("irrelevant_evidence", inp)
    assert out.evidence
    banned = name_words(inp.question, inp.subquery, *inp.later_subqueries)
    banned |= {w for a in inp.gold_answers for w in words(a)}
    for item in out.evidence:
        text = words(item["title"] + " " + item["text"])
        assert banned.isdisjoint(text)
        assert text & words(inp.subquery)  # but a word of the sub-query: it was retrieved


def test_irrelevant_evidence_without_a_retriever_draws_off_topic_corpus_passages() -> None:
    inp = make_input(search=None, score=None)
    out = apply("irrelevant_evidence", inp)
    assert out.evidence and out.record.params["method"] == "rejection"
    banned = words(inp.question) | words(inp.subquery)
    for item in out.evidence:
        assert banned.isdisjoint(words(item["title"] + " " + item["text"]))


def test_irrelevant_passages_are_not_already_in_view() -> None:
    inp = make_input()
    out = apply("irrelevant_evidence", inp)
    assert out.evidence
    assert {e["id"] for e in inp.evidence}.isdisjoint(e["id"] for e in out.evidence)


def test_irrelevant_evidence_skips_without_enough_off_topic_passages() -> None:
    inp = make_input()
    on_topic = [CorpusItem(f"c{i}", inp.question, inp.subquery) for i in range(50)]
    out = apply("irrelevant_evidence", replace(inp, corpus=on_topic, search=None))
    assert not out.applied and out.record.skipped == "no off-topic passage"
    assert out.evidence is None


class LazyCorpus(Sequence[CorpusItem]):
    """A large corpus made on access, counting how many passages a fault looked at."""

    def __init__(self, size: int, off_topic: set[int] | None = None) -> None:
        self.size, self.off_topic, self.reads = size, off_topic, 0

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> CorpusItem: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[CorpusItem]: ...

    def __getitem__(self, i: int | slice) -> CorpusItem | Sequence[CorpusItem]:
        if isinstance(i, slice):
            raise NotImplementedError
        self.reads += 1
        if self.off_topic is None or i in self.off_topic:
            return CorpusItem(f"big{i}", f"Tolmere {i}", f"Harbour number {i} by the bay.")
        return CorpusItem(f"big{i}", "Quorin Rising", "Who directed Quorin Rising?")


def test_irrelevant_evidence_does_not_scan_a_million_passages() -> None:
    big = LazyCorpus(1_000_000)
    out = apply("irrelevant_evidence", quorin(corpus=big))
    assert out.applied and out.record.params["method"] == "rejection"
    assert big.reads < 100


def test_irrelevant_evidence_scans_when_off_topic_passages_are_rare() -> None:
    rare = LazyCorpus(5_000, off_topic={17, 4321})
    out = apply("irrelevant_evidence", quorin(corpus=rare))
    assert out.applied and out.record.params["method"] == "rejection+scan"
    assert sorted(e["id"] for e in out.evidence or []) == ["big17", "big4321"]


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


@pytest.mark.parametrize("name", ["query_drift", "false_premise"])
def test_empty_subquery_is_skipped(name: str) -> None:
    out = apply(name, quorin(subquery=" ? "))
    assert out.record.skipped == "empty sub-query"


# --- false premise -----------------------------------------------------------------------

def injected(out: FaultOutcome) -> dict:
    (new_id,) = out.record.new_ids
    return next(e for e in out.evidence or [] if e["id"] == new_id)


@pytest.mark.parametrize("name", ["false_premise", "stale_evidence"])
def test_injected_item_looks_retrieved_and_its_provenance_is_recorded(name: str) -> None:
    inp = make_input()
    out = apply(name, inp)
    item = injected(out)
    assert_looks_retrieved(inp, out.evidence or [])
    assert item["id"] not in inp.known_ids and item["id"] not in {e["id"] for e in inp.evidence}
    assert item["id"].startswith(hashlib.sha1(item["title"].encode()).hexdigest()[:8] + "-p")
    assert len(out.evidence or []) == len(inp.evidence)  # the lowest original made room


def test_false_premise_keeps_the_other_items_but_the_lowest_scored() -> None:
    inp = make_input()
    out = apply("false_premise", inp)
    kept = [e["id"] for e in out.evidence or [] if e["id"] not in out.record.new_ids]
    assert kept == [e["id"] for e in inp.evidence][:len(kept)]
    assert out.record.provenance[injected(out)["id"]].startswith("template:")


@pytest.mark.parametrize("seed", range(8))
def test_false_premise_asserts_the_subquery_premise_is_false(seed: int) -> None:
    item = injected(apply("false_premise", quorin(seed=seed)))
    assert item["title"] == "Quorin Rising"
    assert "Quorin Rising" in item["text"]
    assert "false" in item["text"]


@pytest.mark.parametrize("subquery, claim, embedded", [
    ("Who directed Quorin Rising?", "anyone directed Quorin Rising",
     "who directed Quorin Rising"),
    ("Who is the publisher of The Silent Bymrorrick?", None,
     "who the publisher of The Silent Bymrorrick is"),
    ("When was Echoes of Grynvysh released?", None, "when Echoes of Grynvysh was released"),
    ("How many people live in East Sungash?", None, "how many people live in East Sungash"),
    ("Was Rulrix and the Sea released before 1990?", None,
     "whether Rulrix and the Sea was released before 1990"),
    ("Where did Vammon Parade form?", None, None),
    ("In which city was Saesfoz Serrall born?", None, None),
])
def test_premise_forms_turn_a_question_into_a_claim_or_embedded_question(
        subquery: str, claim: str | None, embedded: str | None) -> None:
    span, _ = topic(subquery)
    assert _premise_forms(subquery, span) == (claim, embedded)


# --- stale evidence ----------------------------------------------------------------------

def test_stale_evidence_names_its_source_and_takes_its_title() -> None:
    inp = make_input()
    out = apply("stale_evidence", inp)
    item = injected(out)
    source_id = out.record.provenance[item["id"]]
    assert source_id in {e["id"] for e in inp.evidence[:STALE_TOP_K]}
    assert out.record.target_ids == (source_id,)
    assert item["title"] == next(e["title"] for e in inp.evidence if e["id"] == source_id)


def test_stale_evidence_prefers_the_fact_the_clean_hop_found() -> None:
    inp = make_input(0, 2)
    plain = apply("stale_evidence", inp).record.params
    finding = next(f.sentence[f.start:f.end] for _, f in reversed(_facts(inp))
                   if f.kind == "entity"
                   and f.sentence[f.start:f.end] != plain["original_span"])
    chosen = apply("stale_evidence", replace(inp, finding=finding)).record.params
    assert chosen["original_span"] == finding != plain["original_span"]


@pytest.mark.parametrize("example, hop", [(0, 1), (0, 2), (1, 1), (2, 3), (4, 2)])
def test_stale_evidence_is_an_outdated_version_of_a_top_fact(example: int, hop: int) -> None:
    inp = make_input(example, hop)
    out = apply("stale_evidence", inp)
    p = out.record.params
    source = next(e for e in inp.evidence if e["id"] == p["source_id"])
    assert p["original_sentence"] in source["text"]
    assert p["original_span"] in p["original_sentence"]
    assert p["new_span"] != p["original_span"]
    assert p["stale_sentence"] == p["original_sentence"].replace(p["original_span"],
                                                                 p["new_span"], 1)
    text = injected(out)["text"]
    assert p["stale_sentence"][1:] in text
    assert re.search(r"archived|Earlier records|Superseded|edition", text)


def test_stale_entity_swap_takes_a_corpus_span_not_in_view() -> None:
    inp = make_input(0, 1)
    seen = 0
    for seed in range(12):
        out = apply("stale_evidence", replace(inp, seed=seed))
        p = out.record.params
        if p["strategy"] != "entity":
            continue
        seen += 1
        assert any(p["new_span"] in c.title + " " + c.text for c in inp.corpus)
        view = " ".join(e["title"] + " " + e["text"] for e in inp.evidence)
        assert p["new_span"] not in view
    assert seen


@pytest.mark.parametrize("text, allowed", [
    ("1957", {str(1957 + d) for d in (-5, -4, -3, -2, 2, 3, 4, 5)}),
    ("7", {"8", "9", "10"}),
    ("98,660", {"49,330", "69,062", "128,258", "147,990", "197,320"}),
    ("3.5", {"1.8", "2.4", "4.6", "5.2", "7.0"}),
])
def test_shift_number_follows_the_paper_rules(text: str, allowed: set[str]) -> None:
    got = {shift_number(text, seeded_rng(0, i)) for i in range(60)}
    assert got <= allowed and len(got) > 1


def test_stale_evidence_skips_without_a_fact() -> None:
    inp = quorin(evidence=[{"id": "x", "title": "Quorin Rising",
                            "text": "the film was shot in winter. critics liked it.",
                            "rank": 1, "score": 1.0}])
    out = apply("stale_evidence", inp)
    assert out.record.skipped == "no fact to make stale" and out.evidence is None


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


@pytest.mark.parametrize("name", ["irrelevant_evidence", "query_drift", "false_premise",
                                  "stale_evidence"])
def test_faults_depend_on_the_seed(name: str) -> None:
    outcomes = {repr(outcome_key(apply(name, make_input(1, 2, seed=s)))[1:3]) for s in range(6)}
    assert len(outcomes) > 1


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_faults_do_not_mutate_their_input(name: str) -> None:
    inp = make_input(2, 1)
    evidence, corpus = copy.deepcopy(list(inp.evidence)), list(inp.corpus)
    out = apply(name, inp)
    assert list(inp.evidence) == evidence and list(inp.corpus) == corpus
    if out.evidence:
        out.evidence[0]["text"] = "edited"
        assert list(inp.evidence) == evidence


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
    evidence = [{"id": f"e{i}", "title": draw(TEXT), "text": draw(TEXT), "rank": i + 1,
                 "score": draw(st.floats(0, 50))} for i in range(n)]
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

"""Certified content tampering at hop h: span priority, new spans, replacement, certificate,
seeding, skips, and the study's outcome helpers."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.interventions import CorpusItem, FaultInput, get_fault
from cuer_agent.interventions.tampering import (
    FALLBACK_NAMES,
    SKIP_REASONS,
    content_tampering,
)
from cuer_agent.studies.propagation.tampering_outcomes import (
    query_contaminated,
    span_recall,
    tampering_outcome,
)

QUESTION = "Who is the spouse of the director of Inception?"
NOLAN = "Inception is a 2010 film directed by Christopher Nolan."
THOMAS = "Emma Thomas married Christopher Nolan in 1997."


def ev(i: int, text: str, title: str | None = None) -> dict[str, Any]:
    return {"id": f"e{i}", "title": title or f"T{i}", "text": text, "rank": i + 1,
            "score": 10.0 - i}


def make(texts: list[str], *, question: str = QUESTION, gold: tuple[str, ...] = (),
         later: tuple[str, ...] = (), distractors: tuple[str, ...] = (), seed: int = 0,
         hop: int = 1, example_id: str = "ex1", **params: Any) -> FaultInput:
    return FaultInput(example_id=example_id, question=question, hop=hop, subquery="q",
                      evidence=[ev(i, t) for i, t in enumerate(texts)],
                      later_subqueries=later, corpus=(CorpusItem("c1", "Corpus", NOLAN),),
                      seed=seed, gold_answers=gold, distractor_answers=distractors,
                      params=params)


def cert(inp: FaultInput) -> dict[str, Any]:
    out = content_tampering(inp)
    assert out.applied, out.record.skipped
    return out.record.certificate


def texts_after(inp: FaultInput) -> list[str]:
    out = content_tampering(inp)
    assert out.evidence is not None
    return [e["text"] for e in out.evidence]


# ------------------------------------------------------------------ span priority


def test_answer_fact_wins_over_bridge_and_salient() -> None:
    inp = make([NOLAN, THOMAS], gold=("Emma Thomas",),
               later=("Who is Christopher Nolan's spouse?",), distractors=("Berlin",))
    assert cert(inp)["strategy"] == "answer_fact"
    assert cert(inp)["original_span"] == "Emma Thomas"


def test_bridge_entity_wins_over_salient_when_answer_absent() -> None:
    inp = make([NOLAN, THOMAS], gold=("Paris",), later=("Who is Christopher Nolan's spouse?",),
               distractors=("Berlin",))
    c = cert(inp)
    assert (c["strategy"], c["original_span"]) == ("bridge_entity", "Christopher Nolan")


def test_salient_span_used_without_answer_or_bridge() -> None:
    c = cert(make([NOLAN, THOMAS], distractors=("Berlin",)))
    assert c["strategy"] == "salient"
    assert c["original_span"] in {"Christopher Nolan", "Emma Thomas", "2010", "1997"}


def test_bridge_span_in_the_question_is_not_a_bridge() -> None:
    inp = make([NOLAN], question="Who is the spouse of Christopher Nolan?",
               later=("Who is Christopher Nolan's spouse?",), distractors=("Berlin",))
    c = cert(inp)
    assert c["strategy"] == "salient" and c["original_span"] == "2010"


def test_bridge_single_word_found_by_common_word_sequence() -> None:
    inp = make(["The film was shot in Morocco by a small crew."],
               later=("What is the capital of Morocco?",), distractors=("Peru",))
    c = cert(inp)
    assert (c["strategy"], c["original_span"], c["new_span"]) == (
        "bridge_entity", "Morocco", "Peru")


def test_bridge_ignores_sentence_initial_capital_lowercase_in_subquery() -> None:
    inp = make(["Born in a small village, she left early."],
               later=("When was she born?",))
    assert content_tampering(inp).record.skipped == "nothing certifiable"


@pytest.mark.parametrize("answer", ["yes", "No", "UK", "a b"])
def test_short_or_yes_no_answers_are_not_answer_facts(answer: str) -> None:
    inp = make([f"{answer} was said by Emma Thomas in the UK."], gold=(answer,),
               distractors=("Berlin",))
    assert cert(inp)["strategy"] != "answer_fact"


def test_answer_fact_match_is_case_insensitive_whole_word() -> None:
    inp = make(["The Parisian crowd cheered.", "PARIS hosted it; Paris again."],
               gold=("paris",), distractors=("Berlin",))
    c = cert(inp)
    assert (c["strategy"], c["original_span"]) == ("answer_fact", "Paris")
    assert texts_after(inp) == ["The Parisian crowd cheered.", "BERLIN hosted it; Berlin again."]


def test_longest_gold_alias_is_the_answer_fact() -> None:
    inp = make(["Barack Obama spoke."], gold=("Obama", "Barack Obama"), distractors=("Tom Hanks",))
    assert cert(inp)["original_span"] == "Barack Obama"


# ------------------------------------------------------------------ new spans


@pytest.mark.parametrize("seed", range(8))
def test_year_shifts_by_two_to_five(seed: int) -> None:
    inp = make(["The bridge opened in 1961."], gold=("1961",), seed=seed)
    new = cert(inp)["new_span"]
    assert re.fullmatch(r"\d{4}", new) and 2 <= abs(int(new) - 1961) <= 5


@pytest.mark.parametrize("seed", range(6))
def test_small_integer_grows_by_one_to_three(seed: int) -> None:
    new = cert(make(["It has 7 towers."], gold=("7",), min_answer_chars=1, seed=seed))["new_span"]
    assert int(new) - 7 in (1, 2, 3)


@pytest.mark.parametrize("number, shape", [
    ("1,500", r"\d{1,3}(,\d{3})*"), ("3.5", r"\d+\.\d"), ("0.5", r"[01]\.\d"),
    ("1,234.56", r"\d{1,3}(,\d{3})*\.\d\d"), ("12", r"\d+"), ("12,000,000", r"\d{1,3}(,\d{3})+"),
])
def test_scaled_number_keeps_its_format(number: str, shape: str) -> None:
    for seed in range(5):
        new = cert(make([f"It cost {number} coins."], gold=(number,), seed=seed))["new_span"]
        ratio = float(new.replace(",", "")) / float(number.replace(",", ""))
        assert re.fullmatch(shape, new) and new != number
        assert any(abs(ratio - f) < 0.11 for f in (0.5, 0.7, 1.3, 1.5, 2.0))


def test_new_number_avoids_values_already_in_evidence() -> None:
    present = "1957 1958 1959 1963 1964 1965 1966"
    for seed in range(4):  # 1956 is the only shift of 1961 not already in view
        assert cert(make([f"Born 1961. Other years: {present}."], gold=("1961",),
                         seed=seed))["new_span"] == "1956"


def test_number_inside_an_entity_span_is_perturbed_alone() -> None:
    c = cert(make(["Apollo 11 landed first."], gold=("Apollo 11",)))
    assert c["new_span"].startswith("Apollo ") and c["new_span"] != "Apollo 11"


def test_entity_distractor_shares_no_token_and_is_not_present() -> None:
    inp = make(["Emma Thomas met Berlin Smith in Madrid."], gold=("Emma Thomas",),
               distractors=("Thomas Edison", "Madrid", "Berlin", "Steven Spielberg", "yes",
                            "1999"))
    assert cert(inp)["new_span"] == "Steven Spielberg"


def test_fallback_name_used_when_no_distractor_fits() -> None:
    inp = make(["Emma Thomas produced it."], gold=("Emma Thomas",),
               distractors=("Thomas Edison", "Emma Stone"))
    c = cert(inp)
    assert c["new_span"] in FALLBACK_NAMES
    assert content_tampering(inp).record.params["source"] == "fallback"


def test_params_override_module_constants() -> None:
    new = cert(make(["Opened in 1961."], gold=("1961",), year_shifts=(10,)))["new_span"]
    assert new in ("1951", "1971")


# ------------------------------------------------------------------ replacement


def test_every_whole_word_occurrence_replaced_but_not_substrings() -> None:
    inp = make(["Paris is big. Parisian food; Paris-based firms; in Paris.", "Paris again"],
               gold=("Paris",), distractors=("Berlin",))
    assert texts_after(inp) == [
        "Berlin is big. Parisian food; Berlin-based firms; in Berlin.", "Berlin again"]
    assert cert(inp)["replacements"] == 4


def test_number_not_replaced_inside_larger_numbers() -> None:
    inp = make(["In 1961 (not 21961 or 1961.5 or 3,1961) and 1961."], gold=("1961",),
               year_shifts=(2,), seed=1)
    out = texts_after(inp)[0]
    new = cert(inp)["new_span"]
    assert out == f"In {new} (not 21961 or 1961.5 or 3,1961) and {new}."


def test_lowercase_common_word_is_not_the_capitalised_entity() -> None:
    inp = make(["In May she said she may return. MAY rallies."], gold=("May",),
               distractors=("October",))
    assert texts_after(inp) == ["In October she said she may return. OCTOBER rallies."]


def test_only_hop_evidence_changes_and_input_is_not_mutated() -> None:
    inp = make([NOLAN, THOMAS, "Unrelated text."], gold=("Christopher Nolan",),
               distractors=("Steven Spielberg",))
    before = copy.deepcopy(list(inp.evidence)), copy.deepcopy(inp.corpus)
    out = content_tampering(inp)
    assert (list(inp.evidence), inp.corpus) == before
    assert out.evidence is not None
    for old, new in zip(inp.evidence, out.evidence, strict=True):
        assert {k: v for k, v in new.items() if k != "text"} == {
            k: v for k, v in old.items() if k != "text"}
    assert out.evidence[2] == inp.evidence[2] and out.evidence[2] is not inp.evidence[2]


def test_title_is_not_edited() -> None:
    inp = FaultInput(example_id="x", question="q?", hop=1, subquery="q",
                     evidence=[ev(0, "Paris is a city.", title="Paris")],
                     later_subqueries=(), corpus=(), seed=0, gold_answers=("Paris",),
                     distractor_answers=("Lima",))
    out = content_tampering(inp)
    assert out.evidence is not None and out.evidence[0]["title"] == "Paris"


def test_certificate_fields() -> None:
    inp = make([NOLAN, "Nothing here.", THOMAS], gold=("Christopher Nolan",), hop=2,
               distractors=("Steven Spielberg",))
    record = content_tampering(inp).record
    assert record.certificate == {
        "hop": 2, "strategy": "answer_fact", "original_span": "Christopher Nolan",
        "new_span": "Steven Spielberg", "documents_touched": ["e0", "e2"], "replacements": 2}
    assert record.target_ids == ("e0", "e2") and record.skipped == ""
    assert record.record_id == "ex1/content_tampering@2"


# ------------------------------------------------------------------ seeding


def _dump(inp: FaultInput) -> bytes:
    out = content_tampering(inp)
    return json.dumps([out.record.model_dump(), out.evidence], sort_keys=True).encode()


def test_same_input_gives_same_output_bytes() -> None:
    inp = make([NOLAN, THOMAS], distractors=("Berlin", "Lima", "Oslo"))
    assert _dump(inp) == _dump(copy.deepcopy(inp))


def test_seed_and_hop_change_the_choice() -> None:
    texts = [f"Alpha Beta{i} met Gamma Delta{i} in {1900 + i}." for i in range(6)]
    by_hop = {_dump(make(texts, hop=h, distractors=("Lima",))) for h in range(1, 7)}
    by_seed = {_dump(make(texts, seed=s, distractors=("Lima",))) for s in range(6)}
    assert len(by_hop) > 1 and len(by_seed) > 1


# ------------------------------------------------------------------ skips


@pytest.mark.parametrize("texts", [[], ["", "   "]])
def test_skip_empty_evidence(texts: list[str]) -> None:
    out = content_tampering(make(texts, gold=("Paris",)))
    assert out.record.skipped == "empty evidence" and out.evidence is None


def test_skip_nothing_certifiable() -> None:
    out = content_tampering(make(["all lowercase words here, nothing else."], gold=("Paris",)))
    assert out.record.skipped == "nothing certifiable" and out.evidence is None


def test_skip_no_distractor() -> None:
    out = content_tampering(make(["Emma Thomas produced it."], gold=("Emma Thomas",),
                                 distractors=("Emma Stone",), fallback_names=("Thomas Tank",)))
    assert out.record.skipped == "no distractor" and out.evidence is None
    assert out.record.params["strategy"] == "answer_fact"


def test_fault_is_registered_at_the_retrieve_boundary() -> None:
    spec = get_fault("content_tampering")
    assert (spec.stage, spec.boundary, spec.apply) == ("retrieval", "retrieve", content_tampering)


# ------------------------------------------------------------------ outcomes


def test_span_recall_counts_normalised_span_tokens_in_answer() -> None:
    assert span_recall("Steven Spielberg", "It was steven spielberg.") == 1.0
    assert span_recall("Steven Spielberg", "Spielberg") == 0.5
    assert span_recall("", "anything") == 0.0


@pytest.mark.parametrize("correct, answer, expected", [
    (True, "Steven Spielberg", "resisted"),
    (False, "the director Steven Spielberg", "absorbed"),
    (False, "Spielberg", "derailed"),
    (False, "Emma Stone", "derailed"),
])
def test_outcome_classification(correct: bool, answer: str, expected: str) -> None:
    certificate = {"new_span": "Steven Spielberg"}
    assert tampering_outcome(correct, answer, certificate) == expected


def test_outcome_accepts_the_record() -> None:
    record = content_tampering(make(["Paris is big."], gold=("Paris",),
                                    distractors=("Lima",))).record
    assert tampering_outcome(False, "Lima", record) == "absorbed"


def test_query_contamination_is_whole_word_case_insensitive() -> None:
    assert query_contaminated("Steven Spielberg", ["When was steven spielberg born?"])
    assert not query_contaminated("Lima", ["Who founded Limassol?"])
    assert not query_contaminated("Lima", [])


# ------------------------------------------------------------------ property

_words = st.sampled_from(["Paris", "paris", "Emma", "Thomas", "of", "the", "1961", "7", "1,500",
                          "3.5", "Born", "in", "Nolan's", "yes", "-", ",", ".", "Ünïcode", "x"])
_text = st.lists(_words, max_size=12).map(" ".join) | st.text(max_size=40)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(_text, max_size=4), gold=st.lists(_text, max_size=2),
       later=st.lists(_text, max_size=2), distractors=st.lists(_text, max_size=3),
       question=_text, seed=st.integers(0, 3))
def test_never_raises_and_keeps_ids(texts: list[str], gold: list[str], later: list[str],
                                    distractors: list[str], question: str, seed: int) -> None:
    inp = make(texts, question=question, gold=tuple(gold), later=tuple(later),
               distractors=tuple(distractors), seed=seed)
    out = content_tampering(inp)
    if out.record.skipped:
        assert out.record.skipped in SKIP_REASONS and out.evidence is None
        return
    assert out.evidence is not None
    assert [e["id"] for e in out.evidence] == [e["id"] for e in inp.evidence]
    c = out.record.certificate
    assert c["replacements"] >= 1 and c["original_span"] != c["new_span"]
    assert set(c["documents_touched"]) <= {e["id"] for e in inp.evidence}

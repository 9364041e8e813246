"""CUE-R operators, target selection and conditions: pure functions on evidence lists."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.data import Passage
from cuer_agent.interventions import (
    ConditionInput,
    ReplacementPool,
    duplicate,
    get_condition,
    random_target,
    remove,
    seeded_rng,
    select_target,
)
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.trace import Evidence


def ev(i: int, title: str | None = None, text: str = "") -> Evidence:
    return Evidence(id=f"e{i}", title=title or f"T{i}", text=text or f"text {i}", rank=i + 1,
                    score=10.0 - i)


EVIDENCE = [ev(0), ev(1, "Gold A"), ev(2), ev(3, "Gold B")]


@pytest.mark.parametrize("used, gold, expected, rule", [
    ({"e3", "e2"}, {"Gold B"}, "e3", "used+gold"),
    ({"e2"}, {"Gold B"}, "e2", "used"),
    (set(), {"Gold A", "Gold B"}, "e1", "gold"),
    (set(), set(), "e0", "top"),
])
def test_target_follows_the_cuer_priority(used: set, gold: set, expected: str,
                                          rule: str) -> None:
    target = select_target(EVIDENCE, used, gold)
    assert target is not None and (target.id, target.rule) == (expected, rule)


def test_no_target_without_evidence() -> None:
    assert select_target([], {"x"}, {"y"}) is None
    assert random_target([], seeded_rng(0)) is None


def test_random_target_is_seeded() -> None:
    picks = {random_target(EVIDENCE, seeded_rng(0, "ex", i)).id for i in range(40)}
    assert picks == {"e0", "e1", "e2", "e3"}
    assert random_target(EVIDENCE, seeded_rng(7, "ex")) == random_target(EVIDENCE,
                                                                          seeded_rng(7, "ex"))


def test_remove_drops_the_target_and_reranks() -> None:
    target = select_target(EVIDENCE, {"e1"}, set())
    out = remove(EVIDENCE, [target])
    assert [e.id for e in out] == ["e0", "e2", "e3"]
    assert [e.rank for e in out] == [1, 2, 3]


@pytest.mark.parametrize("position, order", [("end", ["e0", "e1", "e2", "e3", "copy"]),
                                             ("front", ["copy", "e0", "e1", "e2", "e3"]),
                                             ("after", ["e0", "e1", "copy", "e2", "e3"])])
def test_duplicate_positions(position: str, order: list[str]) -> None:
    target = select_target(EVIDENCE, {"e1"}, set())
    out, copy_ = duplicate(EVIDENCE, target, position)  # type: ignore[arg-type]
    assert [e.id if e.id != copy_.id else "copy" for e in out] == order
    assert copy_.text == EVIDENCE[1].text


def test_duplicate_copy_has_a_real_form_id_of_its_title() -> None:
    target = select_target(EVIDENCE, {"e1"}, set())
    _, copy_ = duplicate(EVIDENCE, target)
    assert re.fullmatch(r"[0-9a-f]{12}-c0", copy_.id)
    assert copy_.id == duplicate(EVIDENCE, target)[1].id  # deterministic
    assert copy_.id not in {e.id for e in EVIDENCE}


@given(st.lists(st.integers(0, 9), min_size=1, max_size=8, unique=True), st.integers(0, 7))
def test_operators_never_mutate_their_input(ids: list[int], pick: int) -> None:
    evidence = [ev(i) for i in ids]
    before = copy.deepcopy(evidence)
    target = select_target(evidence, {evidence[pick % len(evidence)].id}, set())
    remove(evidence, [target])
    duplicate(evidence, target, "front")
    assert evidence == before


PASSAGES = [Passage(title=t, text=x, index=i) for i, (t, x) in enumerate([
    ("Gold A", "Ada Lovelace wrote the first program."),
    ("Gold B", "Charles Babbage designed the engine."),
    ("Near", "Ada Lovelace was a mathematician in London."),
    ("Far", "The river flows through the valley."),
    ("Other", "Babbage engine difference machine."),
])]


def pool_input(**kw: object) -> ConditionInput:
    retriever = BM25Retriever.from_passages(PASSAGES)
    evidence = retriever.retrieve("Ada Lovelace program", 1)
    base = dict(example_id="x", question="Who wrote the first program, Ada Lovelace?",
                evidence=evidence, used_ids={evidence[0].id},
                gold_titles={"Gold A", "Gold B"},
                pool=ReplacementPool(retriever, {"Gold A", "Gold B"}), seed=0)
    base.update(kw)
    return ConditionInput(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("hardness", ["easy", "medium", "hard"])
def test_replacement_is_never_in_view_or_gold(hardness: str) -> None:
    inp = pool_input(params={"hardness": hardness})
    edited, record = get_condition("replace")(inp, "replace")
    assert edited is not None and not record.skipped
    new = record.new_ids[0]
    assert new not in {e.id for e in inp.evidence}
    assert next(e for e in edited if e.id == new).title not in {"Gold A", "Gold B"}
    assert len(edited) == len(inp.evidence)


def test_medium_replacement_is_the_most_question_similar() -> None:
    edited, record = get_condition("replace")(pool_input(), "replace")
    assert next(e for e in edited if e.id == record.new_ids[0]).title == "Near"


def test_replace_is_skipped_when_nothing_non_supporting_exists() -> None:
    inp = pool_input(gold_titles={p.title for p in PASSAGES},
                     pool=ReplacementPool(BM25Retriever.from_passages(PASSAGES),
                                          {p.title for p in PASSAGES}))
    edited, record = get_condition("replace")(inp, "replace")
    assert edited is None and record.skipped == "no non-supporting item for REPLACE"


def test_two_support_removal_needs_two_gold_titles_in_view() -> None:
    inp = pool_input()  # only "Gold A" is in view
    assert {e.title for e in inp.evidence} == {"Gold A"}
    edited, record = get_condition("remove_support")(inp, "remove_both_supports")
    assert edited is None
    assert record.skipped == "fewer than two gold supports in view"


def test_both_supports_removal_drops_every_gold_item() -> None:
    evidence = EVIDENCE
    inp = ConditionInput(example_id="x", question="q", evidence=evidence, used_ids=set(),
                         gold_titles={"Gold A", "Gold B"}, pool=None, seed=0,
                         params={"which": "both"})
    edited, record = get_condition("remove_support")(inp, "remove_both_supports")
    assert [e.id for e in edited] == ["e0", "e2"]
    assert record.target_titles == ("Gold A", "Gold B")


def test_zero_retrieval_empties_the_context() -> None:
    edited, record = get_condition("zero_retrieval")(pool_input(), "zero_retrieval")
    assert edited == [] and record.operator == "EMPTY"


def test_records_name_the_example_and_condition() -> None:
    _, record = get_condition("duplicate")(pool_input(params={"position": "front"}), "dup_f")
    assert record.record_id == "x/dup_f"
    assert record.provenance == {record.new_ids[0]: record.target_ids[0]}
    assert record.params == {"position": "front"}


def test_unknown_condition_is_a_config_error() -> None:
    from cuer_agent.errors import ConfigError
    with pytest.raises(ConfigError, match="unknown condition"):
        get_condition("shuffle")


def test_seeded_rng_is_stable_across_calls() -> None:
    a = seeded_rng(1, "ex", 2, "replace").integers(0, 10**9, 5)
    b = seeded_rng(1, "ex", 2, "replace").integers(0, 10**9, 5)
    assert np.array_equal(a, b)

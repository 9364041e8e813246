"""A fault as a state of the corpus: what the retriever returns from an edited index."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.data import Passage
from cuer_agent.interventions.corpus import CorpusCondition, CorpusEdit, query_key
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.trace import Evidence

PASSAGES = [
    Passage(title="Quorin Rising", text="Quorin Rising was directed by Pell Varnick.", index=0),
    Passage(title="Quorin Rising", text="Quorin Rising received mixed reviews.", index=1),
    Passage(title="The Quorin Letters", text="The Quorin Letters was directed by Ansa "
                                             "Varnick.", index=0),
    Passage(title="Tolmere", text="Tolmere is a coastal city located in North Nilzak.", index=0),
    Passage(title="Pell Varnick", text="Pell Varnick directed Quorin Rising in 1987.", index=0),
]
QUERY = "Who directed Quorin Rising?"


@cache
def retriever() -> BM25Retriever:
    return BM25Retriever.from_passages(PASSAGES)


def search(query: str, k: int) -> list[Evidence]:
    return retriever().retrieve(query, k)


def ids(evidence: list[Evidence]) -> list[str]:
    return [e.id for e in evidence]


def view(edit: CorpusEdit, query: str = QUERY, k: int = 3) -> list[Evidence]:
    return edit.view(search, retriever().score_text, query, k)


def test_an_empty_edit_returns_what_the_retriever_returns() -> None:
    assert view(CorpusEdit()) == search(QUERY, 3)


def test_withheld_passages_leave_and_the_next_ones_move_up() -> None:
    clean = search(QUERY, 5)
    gone = clean[0].id
    shown = view(CorpusEdit(withheld=frozenset({gone})))
    assert ids(shown) == [i for i in ids(clean) if i != gone][:3]
    assert [e.rank for e in shown] == [1, 2, 3]


def test_an_added_passage_is_ranked_by_the_retrievers_own_score() -> None:
    added = Evidence(id="new-p2-c0", title="Quorin Rising",
                     text="Quorin Rising was directed by Ansa Varnick.")
    shown = view(CorpusEdit(added=(added,)), k=5)
    item = next(e for e in shown if e.id == "new-p2-c0")
    assert item.score == pytest.approx(retriever().score_text(QUERY, added.title,
                                                                 added.text))
    assert shown == sorted(shown, key=lambda e: (-e.score, e.id))


def test_an_added_passage_that_matches_nothing_is_not_returned() -> None:
    added = Evidence(id="x-p0-c0", title="Unrelated", text="Nothing to see.")
    assert "x-p0-c0" not in ids(view(CorpusEdit(added=(added,)), k=5))


def test_an_edited_passage_is_returned_with_its_new_text_and_score() -> None:
    clean = search(QUERY, 3)
    target = clean[0]
    edited = Evidence(id=target.id, title=target.title,
                      text=target.text.replace("Pell", "Ansa"))
    shown = view(CorpusEdit(edited={target.id: edited}))
    item = next(e for e in shown if e.id == target.id)
    assert item.text == edited.text
    assert item.score == pytest.approx(retriever().score_text(QUERY, target.title,
                                                                 edited.text))


def test_a_blank_query_returns_nothing_and_others_are_answered() -> None:
    edit = CorpusEdit(blank=frozenset({query_key(QUERY)}))
    assert view(edit) == []
    assert view(edit, "Rising Quorin directed who") == []  # same words, any order
    assert view(edit, "Who is Pell Varnick?")


def test_the_condition_holds_from_its_hop_on_and_not_where_repaired() -> None:
    gone = search(QUERY, 1)[0].id
    condition = CorpusCondition(2, CorpusEdit(withheld=frozenset({gone})))
    assert gone in ids(condition.retrieve(retriever(), 1, QUERY, 3))
    assert gone not in ids(condition.retrieve(retriever(), 2, QUERY, 3))
    assert gone not in ids(condition.retrieve(retriever(), 3, QUERY, 3))
    assert gone in ids(condition.repaired(3).retrieve(retriever(), 3, QUERY, 3))
    assert condition.issue(2, 1, QUERY) == QUERY and condition.hop_budget(3) == 3


def test_a_condition_names_its_edit_in_its_repr() -> None:
    one = CorpusCondition(1, CorpusEdit(withheld=frozenset({"a"})))
    other = CorpusCondition(1, CorpusEdit(withheld=frozenset({"b"})))
    assert repr(one) != repr(other)
    assert repr(one) == repr(CorpusCondition(1, CorpusEdit(withheld=frozenset({"a"}))))


@settings(max_examples=60, deadline=None)
@given(withheld=st.sets(st.sampled_from(ids(search("Quorin Rising Tolmere Varnick", 5))),
                        max_size=3),
       k=st.integers(0, 6), query=st.sampled_from([QUERY, "Tolmere", "Varnick 1987", "x"]))
def test_a_view_never_shows_a_withheld_passage_and_is_ranked(withheld: set[str], k: int,
                                                             query: str) -> None:
    shown = view(CorpusEdit(withheld=frozenset(withheld)), query, k)
    assert not set(ids(shown)) & withheld
    assert len(shown) <= k
    assert [e.rank for e in shown] == list(range(1, len(shown) + 1))

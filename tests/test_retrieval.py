"""BM25 retrieval: tokenizer, chunk ids, ranking, tie-breaks, engine parity, LangChain."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuer_agent.data._example import Dataset, Example, HopGold, Passage
from cuer_agent.errors import ConfigError
from cuer_agent.retrieval import (
    ENGINES,
    IDFS,
    BM25Retriever,
    Chunk,
    LangChainRetrieverAdapter,
    Retriever,
    as_langchain_retriever,
    chunk_passages,
    support_recall_at_k,
    tokenize,
)
from cuer_agent.trace import evidence_id

PASSAGES = [
    Passage(title="Quorin Rising", index=0,
            text="Quorin Rising is a 1994 film directed by Mara Velt. It was shot in Drelm."),
    Passage(title="Mara Velt", index=1,
            text="Mara Velt is a director born in Skaal. Velt studied film in Drelm."),
    Passage(title="Skaal", index=2, text="Skaal is a city in Northern Vrenn, a harbour city."),
    Passage(title="Drelm", index=3, text="Drelm is a town known for its film studios."),
    Passage(title="Vrenn", index=4, text="Vrenn is a country. Its capital is Ostra."),
    # Filler: Robertson idf is 0 for words in half the documents or more, so a tiny
    # corpus needs unrelated passages for its content words to count.
    *(Passage(title=f"Filler {n}", index=5 + n, text=f"Unrelated note {n} about weather.")
      for n in range(5)),
]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5)


def _data_dir() -> Path:
    env = os.environ.get("CUER_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def test_tokenize_lowercases_keeps_unicode_words_and_drops_stopwords() -> None:
    assert tokenize("The Café of Zürich, in 1976: it's ÜBER_cool!") == [
        "café", "zürich", "1976", "über_cool"]
    assert tokenize("the of and") == []
    assert tokenize("") == []


def test_chunk_ids_are_stable_and_short_passages_are_one_chunk() -> None:
    first = chunk_passages(PASSAGES)
    assert first == chunk_passages(list(PASSAGES))
    assert [c.id for c in first] == [evidence_id(p.title, p.index, 0) for p in PASSAGES]
    assert [c.text for c in first] == [p.text for p in PASSAGES]
    assert all(c.chunk == 0 for c in first)


def test_chunking_packs_sentences_greedily_and_isolates_overlong_sentences() -> None:
    long = " ".join(["word"] * 12) + "."
    text = f"One two three. Four five six. Seven eight. {long} Nine ten."
    chunks = chunk_passages([Passage(title="T", text=text, index=7)], max_words=6)
    assert [c.text for c in chunks] == [
        "One two three. Four five six.", "Seven eight.", long, "Nine ten."]
    assert [c.id for c in chunks] == [evidence_id("T", 7, n) for n in range(4)]
    assert all(c.paragraph == 7 and c.title == "T" for c in chunks)
    with pytest.raises(ConfigError):
        chunk_passages(PASSAGES, max_words=0)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_retrieve_ranks_from_one_with_descending_positive_scores(engine: str) -> None:
    retriever = BM25Retriever.from_passages(PASSAGES, engine=engine)
    assert isinstance(retriever, Retriever)
    hits = retriever.retrieve("Which film did Mara Velt direct?", 3)
    assert [e.rank for e in hits] == [1, 2, 3]
    assert all(e.score > 0 for e in hits)
    assert [e.score for e in hits] == sorted((e.score for e in hits), reverse=True)
    assert hits[0].title in {"Mara Velt", "Quorin Rising"}
    # Only matching chunks come back, however large k is.
    everything = retriever.retrieve("Ostra", 50)
    assert [e.title for e in everything] == ["Vrenn"]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_exact_ties_break_by_chunk_id_whatever_the_input_order(engine: str) -> None:
    twins = [Passage(title=f"Twin {n}", text="Gorlak harbour fish market.", index=n)
             for n in range(4)]
    others = [Passage(title=f"Other {n}", text=f"Unrelated text number {n}.", index=10 + n)
              for n in range(6)]
    chunks = chunk_passages(twins + others)
    tied = sorted(c.id for c in chunks[:4])
    for order in (chunks, chunks[::-1], chunks[3:] + chunks[:3]):
        hits = BM25Retriever(order, engine=engine).retrieve("gorlak fish", 3)
        assert [e.id for e in hits] == tied[:3]  # cut inside the tie: smallest ids win
        assert len({e.score for e in hits}) == 1


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_query_of_stopwords_or_unknown_words_returns_nothing(engine: str) -> None:
    retriever = BM25Retriever.from_passages(PASSAGES, engine=engine)
    assert retriever.retrieve("what is the", 5) == []
    assert retriever.retrieve("zzyzx qwerty", 5) == []
    assert retriever.retrieve("", 5) == []
    assert retriever.retrieve("film", 0) == []
    assert BM25Retriever([], engine=engine).retrieve("film", 5) == []
    empty_text = [Chunk(id="x-p0-c0", title="", text="", paragraph=0, chunk=0)]
    assert BM25Retriever(empty_text, engine=engine).retrieve("film", 5) == []


def test_a_repeated_query_is_answered_from_memory_as_a_fresh_list(monkeypatch) -> None:
    retriever = BM25Retriever(chunk_passages(PASSAGES))  # its own: nothing kept yet
    first = retriever.retrieve("Which film did Mara Velt direct?", 3)
    searched: list[str] = []
    monkeypatch.setattr(retriever, "_search",
                        lambda query, k: searched.append(query) or [])  # type: ignore[func-returns-value]
    again = retriever.retrieve("Which film did Mara Velt direct?", 3)
    assert again == first and again is not first and searched == []
    again.clear()  # a caller's list is its own
    assert retriever.retrieve("Which film did Mara Velt direct?", 3) == first
    assert retriever.retrieve("Which film did Mara Velt direct?", 2) == []  # k is part of the key
    assert searched == ["Which film did Mara Velt direct?"]


def test_the_same_passages_and_settings_share_one_index_and_any_difference_builds_another(
) -> None:
    index = BM25Retriever.from_passages(PASSAGES)
    assert BM25Retriever.from_passages(list(PASSAGES)) is index
    assert BM25Retriever.from_passages(iter(PASSAGES)) is index
    edited = [PASSAGES[0].model_copy(update={"text": PASSAGES[0].text + " More."}),
              *PASSAGES[1:]]
    renumbered = [PASSAGES[0].model_copy(update={"index": PASSAGES[0].index + 1}),
                  *PASSAGES[1:]]
    others = [BM25Retriever.from_passages(edited), BM25Retriever.from_passages(renumbered),
              BM25Retriever.from_passages(PASSAGES[1:]),
              BM25Retriever.from_passages(PASSAGES, idf="robertson"),
              BM25Retriever.from_passages(PASSAGES, engine="rank_bm25"),
              BM25Retriever.from_passages(PASSAGES, max_words=5)]
    assert all(other is not index for other in others)
    assert len({id(other) for other in others}) == len(others)


def test_unknown_engine_or_idf_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown retrieval engine"):
        BM25Retriever(chunk_passages(PASSAGES), engine="nope")
    with pytest.raises(ConfigError, match="unknown idf"):
        BM25Retriever(chunk_passages(PASSAGES), idf="nope")


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_robertson_idf_ignores_terms_in_half_the_pool_and_lucene_idf_does_not(
        engine: str) -> None:
    pool = chunk_passages(PASSAGES[:2])  # "Mara Velt" is in both passages: df = N
    assert BM25Retriever(pool, engine=engine, idf="robertson").retrieve("Mara Velt", 5) == []
    hits = BM25Retriever(pool, engine=engine, idf="lucene").retrieve("Mara Velt", 5)
    assert [e.title for e in hits] == ["Mara Velt", "Quorin Rising"]


@pytest.mark.parametrize("idf", IDFS)
def test_both_engines_agree_on_a_small_corpus(idf: str) -> None:
    chunks = chunk_passages(PASSAGES)
    for query in ("film director born in Skaal", "city harbour Vrenn", "Drelm film studios"):
        a = BM25Retriever(chunks, engine="bm25s", idf=idf).retrieve(query, 10)
        b = BM25Retriever(chunks, engine="rank_bm25", idf=idf).retrieve(query, 10)
        assert [e.id for e in a] == [e.id for e in b]
        assert all(_close(x.score, y.score) for x, y in zip(a, b, strict=True))


def _hotpotqa_pools() -> list[tuple[str, list[Passage]]]:
    path = _data_dir() / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"
    if not path.is_file():
        pytest.skip(f"HotpotQA distractor sample not found at {path} (set CUER_DATA_DIR)")
    from cuer_agent.data import load_dataset

    dataset = load_dataset("hotpotqa", path)
    return [(ex.question, list(ex.passages)) for ex in dataset.examples]


@pytest.mark.shared_data
@pytest.mark.parametrize("idf", IDFS)
def test_bm25_parity_between_engines_on_hotpotqa_distractor_pools(idf: str) -> None:
    pools = _hotpotqa_pools()
    assert len(pools) == 121
    for question, passages in pools:
        chunks = chunk_passages(passages)
        assert all(c.chunk == 0 for c in chunks)
        fast = BM25Retriever(chunks, engine="bm25s", idf=idf)
        ref = BM25Retriever(chunks, engine="rank_bm25", idf=idf)
        a, b = fast.retrieve(question, 5), ref.retrieve(question, 5)
        assert len(a) == len(b), question
        assert all(_close(x.score, y.score) for x, y in zip(a, b, strict=True)), question
        # Above the score at the cut the id sets must match; at the cut, every item one
        # engine kept must be tied (in the other engine) with the other's last item.
        cut = b[-1].score if b else 0.0
        assert {e.id for e in a if not _close(e.score, cut)} == {
            e.id for e in b if not _close(e.score, cut)}, question
        ref_scores = {e.id: e.score for e in ref.retrieve(question, len(chunks))}
        assert all(_close(ref_scores.get(e.id, 0.0), cut) for e in a if _close(e.score, cut))


def test_importing_retrieval_does_not_import_the_optional_langchain_community() -> None:
    code = ("import sys, cuer_agent.retrieval; "
            "sys.exit('langchain_community' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # langchain-community's sunset notice
def test_langchain_community_bm25_is_a_drop_in_retriever() -> None:
    from langchain_community.retrievers import BM25Retriever as CommunityBM25
    from langchain_core.documents import Document

    chunks = chunk_passages(PASSAGES)
    docs = [Document(page_content=c.text,
                     metadata={"title": c.title, "paragraph": c.paragraph, "chunk": c.chunk})
            for c in chunks]
    community = CommunityBM25.from_documents(
        docs, k=3, preprocess_func=lambda t: tokenize(t),
        bm25_params={"k1": 1.5, "b": 0.75, "epsilon": 0.0})
    adapter = LangChainRetrieverAdapter(community)
    assert isinstance(adapter, Retriever)
    query = "director born in Skaal"
    hits = adapter.retrieve(query, 3)
    assert hits == adapter.retrieve(query, 3)
    assert [e.rank for e in hits] == [1, 2, 3]
    by_id = {c.id: c for c in chunks}
    assert all(e.id in by_id and by_id[e.id].text == e.text for e in hits)
    assert all(by_id[e.id].title == e.title for e in hits)
    assert hits[0].title == "Mara Velt"
    # Without a title or id, a Document gets a content-hash id and its first line as title.
    bare = LangChainRetrieverAdapter._evidence(Document(page_content="Head\nbody"), 1)
    assert bare.title == "Head" and bare.id == LangChainRetrieverAdapter._evidence(
        Document(page_content="Head\nbody"), 1).id


def test_as_langchain_retriever_round_trips_through_the_adapter() -> None:
    ours = BM25Retriever.from_passages(PASSAGES)
    lc = as_langchain_retriever(ours, k=3)
    docs = lc.invoke("film studios in Drelm")
    assert [d.metadata["rank"] for d in docs] == [1, 2, 3]
    assert set(docs[0].metadata) == {"id", "title", "rank", "score"}
    assert LangChainRetrieverAdapter(lc).retrieve("film studios in Drelm", 3) == ours.retrieve(
        "film studios in Drelm", 3)


def _two_hop(qid: str, question: str, first: str, second: str | None) -> Example:
    return Example(id=qid, dataset="t", question=question, answer="x",
                   hops=(HopGold(support_title=first), HopGold(support_title=second)))


def test_support_recall_at_k_counts_hops_found_in_the_top_k() -> None:
    examples = [
        # hop 1 found, hop 2 (Skaal: no query word) not found in the top 1
        _two_hop("a", "Where was Mara Velt born?", "Mara Velt", "Skaal"),
        # hop 1 found, hop 2 (Drelm) shares no word with the question
        _two_hop("b", "Ostra is the capital of which country?", "Vrenn", "Drelm"),
        # hop 2 without a support title is left out of the hop-2 denominator
        _two_hop("c", "Which town has film studios?", "Skaal", None),
    ]
    shared = Dataset(name="t", examples=examples, corpus=list(PASSAGES))
    assert support_recall_at_k(shared, k=1) == {1: 2 / 3, 2: 0.0}
    # Same answer when each example brings its own pool instead of a shared corpus.
    own = Dataset(name="t", examples=[e.model_copy(update={"passages": tuple(PASSAGES)})
                                      for e in examples])
    assert support_recall_at_k(own, k=1) == {1: 2 / 3, 2: 0.0}
    assert support_recall_at_k(shared, k=5)[1] == 2 / 3  # "Skaal" never matches example c

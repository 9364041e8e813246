"""Long evidence shown to a small model as its window (`cuer_agent.llm.windows`): the
window that holds the sub-query's terms, recorded in the trace, and nothing cut for a
backend without a budget."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.data import load_dataset
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.llm.skills import ReadRequest
from cuer_agent.llm.windows import shown, window
from cuer_agent.retrieval import sentences
from cuer_agent.studies._common.dataset_run import retriever_factory

FILLER = "The weather was mild that year. " * 10
TEXT = FILLER + "Ann Lee directed the film Blue Harbour in Oslo. " + FILLER


def test_a_text_that_fits_is_shown_whole() -> None:
    assert window("Ann Lee directed Blue Harbour.", "Who directed Blue Harbour?", 5) is None
    assert shown("Ann Lee directed Blue Harbour.", None) == "Ann Lee directed Blue Harbour."


def test_the_window_holds_the_sentence_that_matches_the_query() -> None:
    span = window(TEXT, "Who directed Blue Harbour?", 20)

    assert span is not None and span[1] - span[0] == 20
    assert "Ann Lee directed the film Blue Harbour" in shown(TEXT, span)


def test_without_a_matching_term_the_window_is_the_opening() -> None:
    assert window(TEXT, "zebra quantum", 12) == (0, 12)


@given(st.lists(st.sampled_from(["Ann", "Lee", "film", "Oslo", "rain.", "It", "was", "cold."]),
                min_size=1, max_size=60),
       st.integers(1, 30), st.sampled_from(["Ann Lee", "Oslo rain", "cold film", "x"]))
def test_a_window_is_at_most_the_budget_and_starts_at_a_sentence(
        words: list[str], budget: int, query: str) -> None:
    text = " ".join(words)
    span = window(text, query, budget)
    if len(words) <= budget:
        assert span is None
        return
    assert span is not None
    start, end = span
    assert 0 <= start < end <= len(words) and end - start <= budget
    starts, at = set(), 0
    for sentence in sentences(text):
        starts.add(at)
        at += len(sentence.split())
    assert start in starts


class _Recording:
    """An extractive backend with a small evidence budget that keeps its read requests."""

    def __init__(self, words: int) -> None:
        self.inner = make_backend("extractive")
        self.evidence_words = words
        self.seen: list[ReadRequest] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def respond(self, skill: str, request: Any, rendered: Any) -> Any:
        if isinstance(request, ReadRequest):
            self.seen.append(request)
        return self.inner.respond(skill, request, rendered)


def _trace_with(backend: Any) -> Any:
    dataset = load_dataset("synthetic", n=1, hops=2, seed=7)
    example = dataset.examples[0]
    executor = Executor(SkillClient(backend), AgentConfig(hop_budget=2),
                        meta={"backend": "extractive"})
    return executor.run(example, retriever_factory(dataset)(example)).trace


def test_the_reader_sees_each_long_item_as_its_window_and_the_trace_records_it() -> None:
    backend = _Recording(words=6)
    trace = _trace_with(backend)

    first = trace.hops[0]
    assert first.windows and set(first.windows) <= {e.id for e in first.retrieved}
    request = [r for r in backend.seen if r.hop == 1][-1]  # the attempt the hop kept
    for item in first.retrieved:
        view = next(e for e in request.evidence if e.id == item.id)
        assert view.text == shown(item.text, first.windows.get(item.id))
        assert len(view.text.split()) <= 6
    assert any(len(e.text.split()) > 6 for e in first.retrieved)  # full text kept


def test_a_backend_without_a_budget_shows_every_item_whole() -> None:
    trace = _trace_with(make_backend("extractive"))
    assert all(not hop.windows for hop in trace.hops)

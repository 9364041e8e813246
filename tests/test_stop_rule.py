"""The agent stops when the question is answered, not when its hop budget ends."""

from __future__ import annotations

import dataclasses
from functools import cache

from cuer_agent.data import Dataset, load_dataset
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.extractive import ExtractiveBackend
from cuer_agent.metrics import recall_correct
from cuer_agent.retrieval import BM25Retriever


@cache
def mixed() -> tuple[Dataset, Dataset]:
    """20 two-hop and 20 three-hop questions over one world."""
    two = load_dataset("synthetic", n=20, hops=2, seed=11, size=2000)
    three = load_dataset("synthetic", n=20, hops=3, seed=11, size=2000)
    return two, three


def accuracy(data: Dataset, budget: int) -> list[bool]:
    retriever = BM25Retriever.from_passages(data.corpus or [])
    agent = Executor(SkillClient(ExtractiveBackend()), AgentConfig(hop_budget=budget))
    return [bool(recall_correct(agent.run(ex, retriever).trace.answer, ex.gold_answers))
            for ex in data.examples]


def test_mixed_hop_questions_under_one_budget_score_as_with_their_own() -> None:
    two, three = mixed()
    own = accuracy(two, 2) + accuracy(three, 3)
    shared = accuracy(two, 3) + accuracy(three, 3)
    assert abs(sum(own) - sum(shared)) / len(own) <= 0.05


def test_a_type_check_hop_keeps_an_answer_its_article_confirms() -> None:
    """A 2-hop question under budget 3 may check its answer's type with a third hop; an
    article saying the answer is of the asked type keeps it."""
    two, _ = mixed()
    retriever = BM25Retriever.from_passages(two.corpus or [])
    agent = Executor(SkillClient(ExtractiveBackend()), AgentConfig(hop_budget=3))
    kept = 0
    for ex in dataclasses.replace(two).examples:
        trace = agent.run(ex, retriever).trace
        if len(trace.hops) == 3 and trace.hops[2].finding == trace.hops[1].finding:
            kept += 1
            assert trace.answer == trace.hops[1].finding
    assert kept > 0

"""What the single-shot baseline is asked, and over which passages.

The CUE-R paper's system asks the **whole question** once (BM25 top k) over the
example's own pool: HotpotQA's distractor setting, each question's gold paragraphs
among lexical distractors retrieved for it. `single_shot_data` prepares that:

* real data sets bring their pools (HotpotQA, 2Wiki, MuSiQue): used as shipped;
* the synthetic world is one open corpus, so each question gets its own pool the way
  HotpotQA's were made (`question_pools`): one passage stating each hop's fact (the
  first of its statements; a hidden label the experimenter reads to build the pool),
  plus the passages BM25 ranks highest for the whole question among those of no gold
  title (lexical confusers: same-name siblings, the question's own words), up to
  `pool_size` passages in all;
* `questions = "per_hop"` instead poses each hop's gold sub-question with its bridge
  resolved (`cuer_agent.data._select.hop_questions`): the system is given the gold
  decomposition, a single-hop oracle — an option whose label says so, not the paper's
  system.
"""

from __future__ import annotations

import dataclasses

from cuer_agent.data import Dataset, Passage
from cuer_agent.data._select import hop_questions
from cuer_agent.interventions.facts import fact_source
from cuer_agent.retrieval import BM25Retriever

__all__ = ["question_pools", "single_shot_data"]


def question_pools(dataset: Dataset, size: int = 10) -> Dataset:
    """Each example of an open-corpus data set with its own pool (module docstring);
    the corpus is dropped, so every example retrieves from its pool alone."""
    if dataset.corpus is None:
        return dataset
    facts = fact_source(dataset)
    index = BM25Retriever.from_passages(dataset.corpus)
    passage_at = {(passage.title, passage.index): passage for passage in dataset.corpus}
    by_id = {chunk.id: passage_at[chunk.title, chunk.paragraph] for chunk in index.chunks}
    examples = []
    for example in dataset.examples:
        gold: list[Passage] = []
        for hop in range(1, example.n_hops + 1):
            fact = facts.fact(example, hop)
            if fact is not None and fact.passage_ids and by_id[fact.passage_ids[0]] not in gold:
                gold.append(by_id[fact.passage_ids[0]])
        titles = set(example.supporting_titles) | {p.title for p in gold}
        confusers: list[Passage] = []
        for hit in index.retrieve(example.question, size + 8 * len(titles) + 16):
            if len(gold) + len(confusers) >= size:
                break
            passage = by_id[hit.id]
            if passage.title not in titles and passage not in confusers:
                confusers.append(passage)
        pool = sorted([*gold, *confusers], key=lambda p: (p.title, p.index))
        examples.append(example.model_copy(update={"passages": tuple(pool)}))
    return dataclasses.replace(dataset, examples=examples, corpus=None,
                               info={**dataset.info, "pool_size": size})


def single_shot_data(dataset: Dataset, questions: str, pool_size: int = 10) -> Dataset:
    """The data set the single-shot study runs on (`questions`: whole or per_hop)."""
    if questions == "per_hop":
        return hop_questions(dataset)
    return question_pools(dataset, pool_size)

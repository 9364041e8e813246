"""Loading the examples a study runs on: the data set plus the study's selection."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cuer_agent.data._example import Dataset, Example
from cuer_agent.errors import ConfigError


def filter_gold_hops(dataset: Dataset, gold_hops: str | None) -> Dataset:
    """Keep the examples whose gold hop count is listed ("3,4"); None keeps all."""
    if not gold_hops:
        return dataset
    try:
        wanted = {int(h) for h in gold_hops.split(",") if h.strip()}
    except ValueError:
        raise ConfigError(f"--gold-hops must list integers, got {gold_hops!r}") from None
    kept = [ex for ex in dataset.examples if ex.n_hops in wanted]
    if not kept:
        raise ConfigError(f"no example has {sorted(wanted)} gold hops")
    return dataclasses.replace(dataset, examples=kept)


def load_study_data(dataset: str, path: str | Path | None, n: int | None, hops: int | None,
                    seed: int, gold_hops: str | None = None,
                    redundancy: object = "mix") -> Dataset:
    """A data set as a study uses it: a generated one (the synthetic world) also takes
    its hop count, seed and redundancy; real data may be narrowed to some gold hop
    counts."""
    from cuer_agent.data import is_generated, load_dataset

    extra = ({"hops": hops, "seed": seed, "redundancy": redundancy}
             if is_generated(dataset) else {})
    return filter_gold_hops(load_dataset(dataset, path, n=n, **extra), gold_hops)


def hop_questions(dataset: Dataset) -> Dataset:
    """One single-hop example per hop that has a gold sub-question (bridge resolved): id
    `<example>#h<k>`, the hop's answer and support title as its gold, the parent's pool.

    This is the gold decomposition of each question — a hidden label the *experimenter*
    reads to pose the single-hop questions (the system still sees only the question it
    is asked). Raises `ConfigError` when no example has sub-questions (HotpotQA)."""
    examples = []
    for ex in dataset.examples:
        for k, hop in enumerate(ex.hops, start=1):
            if not hop.question or hop.answer is None:
                continue
            examples.append(Example(
                id=f"{ex.id}#h{k}", dataset=ex.dataset, question=hop.question,
                answer=hop.answer, passages=ex.passages,
                supporting_titles=(hop.support_title,) if hop.support_title else (),
                hops=(hop,), qtype="single-hop",
                meta={"parent": ex.id, "hop": str(k)}))
    if not examples:
        raise ConfigError(f"{dataset.name}: no example has per-hop gold sub-questions, so the "
                          f"single-shot baseline cannot run per hop (use questions = \"whole\")")
    return dataclasses.replace(dataset, examples=examples)

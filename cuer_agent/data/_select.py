"""Loading the examples a study runs on: the data set plus the study's selection."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cuer_agent.data._example import Dataset
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
                    seed: int, gold_hops: str | None = None) -> Dataset:
    """A data set as a study uses it: the synthetic world also takes its hop count and
    seed; real data may be narrowed to some gold hop counts."""
    from cuer_agent.data import load_dataset

    extra = {"hops": hops, "seed": seed} if dataset == "synthetic" else {}
    return filter_gold_hops(load_dataset(dataset, path, n=n, **extra), gold_hops)

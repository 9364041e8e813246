"""Datasets: the `Example` model, loaders for the original file formats, and a registry.

Public surface:

* `Example`, `Passage`, `HopGold`, `Dataset` — the models every loader produces.
* `load_dataset(name, path, n=..., **kwargs)` — load by registry name. Each data set
  registers itself (`register_dataset`) with its help text, aliases, official scorer,
  shared sample files, and whether it is generated (takes no path): the built-ins are
  hotpotqa (alias hotpotqa_fullwiki), 2wiki (aliases twowiki, 2wikimultihopqa), musique
  and synthetic (a generated world).
* `load_hotpotqa`, `load_twowiki`, `load_musique` — the loaders themselves.
* `dataset_names()` — canonical names; `canonical_name` resolves an alias;
  `dataset_about(name)` what a data set declared; `is_generated(name)` whether it takes
  no path.
* `default_data_dir()` and `shared_sample_path(name)` — where the shared dataset
  samples live (``$CUER_DATA_DIR``, default ``../shared/data``).

Bad files raise `cuer_agent.errors.DataError`; unknown names and bad options raise
`cuer_agent.errors.ConfigError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from cuer_agent.data._example import Dataset, Example, HopGold, Passage
from cuer_agent.data._loaders import (
    LOADERS,
    DatasetAbout,
    dataset_about,
    dataset_help,
    is_generated,
    register_dataset,
)
from cuer_agent.data.hotpotqa import load_hotpotqa
from cuer_agent.data.musique import load_musique
from cuer_agent.data.twowiki import load_twowiki
from cuer_agent.errors import ConfigError

__all__ = [
    "LOADERS",
    "Dataset",
    "DatasetAbout",
    "Example",
    "HopGold",
    "Passage",
    "canonical_name",
    "dataset_about",
    "dataset_help",
    "dataset_names",
    "default_data_dir",
    "is_generated",
    "load_dataset",
    "load_hotpotqa",
    "load_musique",
    "load_twowiki",
    "register_dataset",
    "shared_sample_path",
]


def dataset_names() -> list[str]:
    """Canonical names of the registered data sets."""
    return LOADERS.names()


def _aliases() -> dict[str, str]:
    return {alias: name for name in LOADERS.names() for alias in dataset_about(name).aliases}


def canonical_name(name: str) -> str:
    """The canonical dataset name for a registered name or alias (case-insensitive)."""
    key = name.strip().lower()
    key = _aliases().get(key, key)
    if key not in LOADERS:
        known = ", ".join([*LOADERS.names(), *_aliases()])
        raise ConfigError(f"unknown dataset {name!r}; valid names: {known}")
    return key


def load_dataset(name: str, path: str | Path | None = None, *, n: int | None = None,
                 **kwargs: object) -> Dataset:
    """Load a dataset by registry name.

    A data set read from a file needs `path` (its original file) and takes no extra
    options; `n` keeps the first n records, after those records were fully parsed and
    validated. A generated one (``synthetic``) takes no path and gets `n` (when given)
    and `kwargs` (hops, seed, size, ...).
    """
    canonical = canonical_name(name)
    loader = LOADERS.get(canonical)
    if dataset_about(canonical).generated:
        if path is not None:
            raise ConfigError(f"the {canonical} dataset is generated; it takes no --path")
        return loader(None, **(kwargs if n is None else {"n": n, **kwargs}))
    if kwargs:
        raise ConfigError(f"unexpected option(s) for {canonical}: {', '.join(sorted(kwargs))}")
    if path is None:
        raise ConfigError(f"--path is required for {canonical}")
    return loader(path, n=n)


def default_data_dir() -> Path:
    """Directory of the shared dataset samples: ``$CUER_DATA_DIR`` or ``../shared/data``."""
    return Path(os.environ.get("CUER_DATA_DIR", "../shared/data")).resolve()


def shared_sample_path(name: str, data_dir: str | Path | None = None) -> Path | None:
    """The shared sample file of a real dataset, or None when absent (or synthetic).

    ``hotpotqa`` is the distractor sample; ``hotpotqa_fullwiki`` the fullwiki one.
    """
    key = name.strip().lower()
    canonical = canonical_name(key)
    samples = dict(dataset_about(canonical).samples)
    relative = samples.get(key) or samples.get(canonical)
    if relative is None:
        return None
    base = default_data_dir() if data_dir is None else Path(data_dir)
    candidate = base / relative
    return candidate if candidate.is_file() else None

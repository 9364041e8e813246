"""Datasets: the `Example` model, loaders for the original file formats, and a registry.

Public surface:

* `Example`, `Passage`, `HopGold`, `Dataset` — the models every loader produces.
* `load_dataset(name, path, n=..., **kwargs)` — load by registry name:

  ============  ==========================================  =========================
  name          aliases                                     source
  ============  ==========================================  =========================
  hotpotqa      hotpotqa_fullwiki                           JSON array (`hotpotqa`)
  2wiki         twowiki, 2wikimultihopqa                    JSON array (`twowiki`)
  musique       —                                           JSON Lines (`musique`)
  synthetic     —                                           generated world (no path)
  ============  ==========================================  =========================

* `load_hotpotqa`, `load_twowiki`, `load_musique` — the loaders themselves.
* `DATASETS` — canonical names; `canonical_name` resolves an alias.
* `default_data_dir()` and `shared_sample_path(name)` — where the shared dataset
  samples live (``$CUER_DATA_DIR``, default ``../shared/data``).

Bad files raise `cuer_agent.errors.DataError`; unknown names and bad options raise
`cuer_agent.errors.ConfigError`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cuer_agent.data._example import Dataset, Example, HopGold, Passage
from cuer_agent.data._loaders import LOADERS, register_dataset
from cuer_agent.data.hotpotqa import load_hotpotqa
from cuer_agent.data.musique import load_musique
from cuer_agent.data.twowiki import load_twowiki
from cuer_agent.errors import ConfigError

__all__ = [
    "DATASETS",
    "LOADERS",
    "Dataset",
    "Example",
    "HopGold",
    "Passage",
    "canonical_name",
    "default_data_dir",
    "load_dataset",
    "load_hotpotqa",
    "load_musique",
    "load_twowiki",
    "register_dataset",
    "shared_sample_path",
]

DATASETS: tuple[str, ...] = ("hotpotqa", "2wiki", "musique", "synthetic")
"""Canonical dataset names."""

ALIASES: dict[str, str] = {
    "hotpotqa_fullwiki": "hotpotqa",
    "twowiki": "2wiki",
    "2wikimultihopqa": "2wiki",
}

SHARED_SAMPLES: dict[str, str] = {
    "hotpotqa": "hotpotqa/hotpot_dev_distractor_v1.subset.json",
    "hotpotqa_fullwiki": "hotpotqa_fullwiki/hotpot_dev_fullwiki_v1.subset.json",
    "2wiki": "2wikimultihopqa/dev.subset.json",
    "musique": "musique/musique_ans_v1.0_dev.subset.jsonl",
}
"""Shared sample files, relative to `default_data_dir()`, keyed by name or alias."""


def _known_names() -> str:
    extra = [name for name in LOADERS.names() if name not in DATASETS]
    return ", ".join([*DATASETS, *ALIASES, *extra])


def canonical_name(name: str) -> str:
    """The canonical dataset name for a name or alias (case-insensitive); a name a third
    party registered (`register_dataset`) counts as canonical."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in DATASETS and key not in LOADERS:
        raise ConfigError(f"unknown dataset {name!r}; valid names: {_known_names()}")
    return key


def _load_synthetic(path: str | Path | None, n: int | None, **kwargs: object) -> Dataset:
    """Delegate to the synthetic world generator (imported only when asked for)."""
    if path is not None:
        raise ConfigError("the synthetic dataset is generated; it takes no --path")
    from cuer_agent.data.synthetic import load_synthetic

    options: dict[str, Any] = dict(kwargs) if n is None else {"n": n, **kwargs}
    return load_synthetic(**options)


def load_dataset(name: str, path: str | Path | None = None, *, n: int | None = None,
                 **kwargs: object) -> Dataset:
    """Load a dataset by registry name.

    Real datasets need `path` (their original file) and take no extra options; `n`
    keeps the first n records, after those records were fully parsed and validated.
    ``synthetic`` forwards `n` and `kwargs` (hops, seed, size) to `load_synthetic`.
    """
    canonical = canonical_name(name)
    if canonical == "synthetic":
        return _load_synthetic(path, n, **kwargs)
    if kwargs:
        raise ConfigError(f"unexpected option(s) for {canonical}: {', '.join(sorted(kwargs))}")
    if path is None:
        raise ConfigError(f"--path is required for {canonical}")
    return LOADERS.get(canonical)(path, n=n)


def default_data_dir() -> Path:
    """Directory of the shared dataset samples: ``$CUER_DATA_DIR`` or ``../shared/data``."""
    return Path(os.environ.get("CUER_DATA_DIR", "../shared/data")).resolve()


def shared_sample_path(name: str, data_dir: str | Path | None = None) -> Path | None:
    """The shared sample file of a real dataset, or None when absent (or synthetic).

    ``hotpotqa`` is the distractor sample; ``hotpotqa_fullwiki`` the fullwiki one.
    """
    key = name.strip().lower()
    canonical = canonical_name(key)
    relative = SHARED_SAMPLES.get(key) or SHARED_SAMPLES.get(canonical)
    if relative is None:
        return None
    base = default_data_dir() if data_dir is None else Path(data_dir)
    candidate = base / relative
    return candidate if candidate.is_file() else None

"""The registry of data sets (`cuer_agent._registry`): name → ``loader(path, n=...,
**options) -> Dataset``, with what each declares about itself (`DatasetAbout`). The
built-in formats and the generated synthetic world register here; a third party adds one
through the ``cuer_agent.datasets`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from cuer_agent._registry import About, Registry
from cuer_agent.data._example import Dataset

Loader = Callable[..., Dataset]
LOADERS: Registry[Loader] = Registry(
    "dataset", "cuer_agent.datasets",
    builtins=("cuer_agent.data.hotpotqa", "cuer_agent.data.twowiki", "cuer_agent.data.musique",
              "cuer_agent.data.synthetic"))

OfficialScorer = Literal["hotpotqa", "musique"]
"""The official evaluator a data set's predictions are scored by (`metrics.official`):
``hotpotqa`` — hotpot_evaluate_v1's EM/F1, one gold answer, HotpotQA-format predictions;
``musique`` — SQuAD-style F1, the answer's aliases as golds, answerable records only,
predictions also as JSON Lines."""


@dataclass(frozen=True)
class DatasetAbout(About):
    """What a data set declares when it registers (`register_dataset`)."""

    aliases: tuple[str, ...] = ()
    """Other names that resolve to this one (`canonical_name`)."""
    generated: bool = False
    """Generated, not read: it takes no path, and its loader takes the study's hop
    count, seed and redundancy as options (`load_study_data`)."""
    official: OfficialScorer | None = None
    """The official evaluator its predictions are scored by; None: it has none."""
    samples: tuple[tuple[str, str], ...] = ()
    """Shared sample files as (name or alias, path relative to the data directory)."""


def register_dataset(name: str, *, help: str = "", aliases: tuple[str, ...] = (),
                     generated: bool = False, official: OfficialScorer | None = None,
                     samples: tuple[tuple[str, str], ...] = ()) -> Callable[[Loader], Loader]:
    """Decorator: `@register_dataset("name", help=..., ...)` on a loader `(path, n=None,
    **options) -> Dataset`; the keywords are the data set's `DatasetAbout`."""
    return LOADERS.register(name, DatasetAbout(help=help, aliases=aliases, generated=generated,
                                               official=official, samples=samples))


def dataset_about(name: str) -> DatasetAbout:
    """What data set `name` (canonical) declared; the defaults for an unknown name."""
    return LOADERS.about(name, DatasetAbout)


def dataset_help(default: str | None = None) -> str:
    """The registered data sets with what each is, for help texts (`default` marked)."""
    return LOADERS.choices(DatasetAbout, default)


def is_generated(name: str) -> bool:
    """Whether data set `name` (a name or alias) is generated: it takes no path, but the
    study's hop count, seed and redundancy. An unknown name is not (it fails later, where
    it is loaded, with the list of known names)."""
    key = name.strip().lower()
    return any(dataset_about(known).generated for known in LOADERS.names()
               if key == known or key in dataset_about(known).aliases)

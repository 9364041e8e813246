"""The registry of data-set file loaders (`cuer_agent._registry`): name → ``loader(path,
n=...) -> Dataset``. The built-in formats register here; a third party adds one through
the ``cuer_agent.datasets`` entry-point group. (The synthetic world is generated, not
loaded, and has no entry here.)"""

from __future__ import annotations

from collections.abc import Callable

from cuer_agent._registry import Registry
from cuer_agent.data._example import Dataset

Loader = Callable[..., Dataset]
LOADERS: Registry[Loader] = Registry(
    "dataset", "cuer_agent.datasets",
    builtins=("cuer_agent.data.hotpotqa", "cuer_agent.data.twowiki", "cuer_agent.data.musique"))


def register_dataset(name: str) -> Callable[[Loader], Loader]:
    """Decorator: `@register_dataset("name")` on a loader `(path, n=None) -> Dataset`."""
    return LOADERS.register(name)

"""One registry behind every pluggable part: backends, faults, conditions, diagnosers and
data sets.

A `Registry` maps names to objects of one kind. Built-ins register themselves with their
area's decorator (`register_backend`, `fault`, `condition`, `diagnoser`,
`register_dataset`) when their module is imported. On the first lookup a registry
imports its built-in modules *by name* and then loads the third-party entry points of
its group:

=============  ==========================  =============================================
kind           entry-point group           an entry point names
=============  ==========================  =============================================
backend        ``cuer_agent.backends``     a factory ``(model=, base_url=, **kw)``
fault          ``cuer_agent.faults``       a module whose ``@fault`` functions register
condition      ``cuer_agent.conditions``   a module whose ``@condition`` functions register
diagnoser      ``cuer_agent.diagnosers``   a diagnoser class
dataset        ``cuer_agent.datasets``     a loader ``(path, n=...) -> Dataset``
=============  ==========================  =============================================

An entry point that names a module is imported and nothing more (its decorators
register what it holds); any other object is registered under the entry point's name,
unless a decorator already registered that name.

What a plug-in says about itself travels with its registration: `add(name, obj, about)`
stores an `About` (help text, defaults, capabilities — each area subclasses it), which
`about(name, kind)` returns. The CLI help, config defaults, report labels and schemas
ask for it instead of naming plug-ins; a plug-in that declared nothing (an entry point)
gets the defaults of `kind`.

Why by name: a registry that imported its plug-ins would form an import cycle with them
(each plug-in imports its area's decorator), and importing the backend protocol would
import every HTTP client. An unknown name is one `ConfigError` line listing the known ones.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import Generic, TypeVar

from cuer_agent.errors import ConfigError

T = TypeVar("T")
A = TypeVar("A", bound="About")


@dataclass(frozen=True)
class About:
    """What a plug-in declares about itself beside its name; areas subclass it with their
    defaults and capabilities (`BackendAbout`, `DatasetAbout`, ...)."""

    help: str = ""
    """A phrase for CLI help and reports: what this choice is (no trailing period)."""


@dataclass(frozen=True)
class SelectableAbout(About):
    """What a plug-in that studies select several of at once (faults, diagnosers)
    declares: whether it is in the default selection, and where."""

    default_rank: int | None = None
    """Its place in the default selection (the order a study runs and reports them,
    lowest first); None: run only when asked for by name."""


class Registry(Generic[T]):
    """Names → objects of one kind, with lazily imported built-ins and entry points."""

    def __init__(self, kind: str, group: str, builtins: Iterable[str] = (),
                 package: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self.builtins = tuple(builtins)
        """Modules that register the built-ins when imported."""
        self.package = package
        """A package whose every public module (name not starting with ``_``) registers
        built-ins when imported: a new one is a new module there, listed nowhere."""
        self._items: dict[str, T] = {}
        self._about: dict[str, About] = {}
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()  # re-entrant: a built-in may look a name up

    def add(self, name: str, obj: T, about: About | None = None) -> T:
        """Register `obj` under `name`, with what it declares about itself."""
        self._items[name] = obj
        if about is not None:
            self._about[name] = about
        return obj

    def register(self, name: str, about: About | None = None) -> Callable[[T], T]:
        """Decorator: register the decorated object under `name`."""
        return lambda obj: self.add(name, obj, about)

    def about(self, name: str, kind: type[A]) -> A:
        """What `name` declared, or the defaults of `kind` when it declared nothing of that
        kind (a third-party entry point) or is not registered at all (a name read back from
        an old run): reports describe what they can and never fail on a name."""
        self._load()
        declared = self._about.get(name)
        return declared if isinstance(declared, kind) else kind()

    def get(self, name: str) -> T:
        self._load()
        if name not in self._items:
            raise ConfigError(f"unknown {self.kind} {name!r}; choose from "
                              f"{', '.join(sorted(self._items))}")
        return self._items[name]

    def choices(self, kind: type[About] = About, default: str | None = None) -> str:
        """The registered names with their help, as CLI help lists them: ``a (what a is;
        default), b (what b is) or c`` — generated, so a new plug-in shows up in every
        help text that lists its kind."""
        described = []
        for name in self.names():
            notes = [note for note in (self.about(name, kind).help,
                                       "default" if name == default else "") if note]
            described.append(f"{name} ({'; '.join(notes)})" if notes else name)
        if len(described) < 2:
            return "".join(described)
        return f"{', '.join(described[:-1])} or {described[-1]}"

    def default_selection(self) -> tuple[str, ...]:
        """The names in the default selection, in their declared order."""
        ranked = [(about.default_rank, name) for name in self.names()
                  if (about := self.about(name, SelectableAbout)).default_rank is not None]
        return tuple(name for _, name in sorted(ranked))

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def _package_modules(self) -> list[str]:
        if self.package is None:
            return []
        package = importlib.import_module(self.package)
        return [f"{self.package}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
                if not info.name.startswith("_")]

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:  # other threads wait here until the loading thread is done
            if self._loaded or self._loading:  # _loading: a built-in looking a name up
                return
            self._loading = True
            try:
                for module in (*self.builtins, *self._package_modules()):
                    importlib.import_module(module)
                for ep in entry_points(group=self.group):
                    obj = ep.load()
                    if ep.name not in self._items and not isinstance(obj, ModuleType):
                        self._items[ep.name] = obj
            finally:
                self._loading = False
            self._loaded = True

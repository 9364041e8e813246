"""One registry behind backends, faults, conditions, diagnosers and data sets
(`cuer_agent._registry`), and an import graph without cycles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from package_layout import ROOT, package_modules

from cuer_agent import _registry
from cuer_agent.errors import ConfigError


def _modules() -> dict[str, Path]:
    """Every module of the package, by the name it is imported as."""
    return package_modules()


def _import_graph() -> nx.DiGraph:
    """Module → module it imports (at module level or inside a function)."""
    modules, graph = _modules(), nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                    if node.level else []
                mod = ".".join([*base, node.module] if node.module else base) \
                    if node.level else (node.module or "")
                subs = [f"{mod}.{alias.name}" for alias in node.names]
                targets = [t for t in subs if t in modules]
                if len(targets) < len(subs):  # names defined in `mod` itself
                    targets.append(mod)
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def test_the_import_graph_has_no_cycle() -> None:
    graph = _import_graph()
    assert graph.number_of_nodes() > 100 and graph.number_of_edges() > 300
    cycles = [set(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def _folder(module: str) -> str:
    """The room a module stands in, as the house's picture draws it: a top-level module
    or a folder of `cuer_agent` (`cuer_agent.studies.cuer.runner` → `cuer_agent.studies`)."""
    return ".".join(module.split(".")[:2])


def test_no_folder_imports_a_folder_that_imports_it_back() -> None:
    folders = nx.DiGraph()
    for a, b in _import_graph().edges():
        if _folder(a) != _folder(b):
            folders.add_edge(_folder(a), _folder(b))
    assert list(nx.simple_cycles(folders)) == []


STUDY_ROOMS_BELOW = {"_common": set(), "cuer": {"_common"}, "propagation": {"_common"},
                     "diagnose": {"_common"}, "natural": {"_common", "diagnose"},
                     "evaluate": {"_common", "cuer", "propagation", "diagnose", "natural"}}
"""What each room of `cuer_agent.studies` may import from its siblings: `evaluate` stands
on the studies it combines, they stand on `_common` only (`natural` also on `diagnose`,
whose labels and scoring it shares); `schemas` and `replay` stand above all the rooms."""


LAYERS = (
    ("_json", "_lru", "_part", "_registry", "_validation", "errors", "interrupts", "provenance",
     "run_dir", "trace", "step_trace", "data", "metrics"),
    ("llm", "retrieval", "interventions", "roles", "parallel"),
    ("agent_context", "agents", "graphs"),
    ("execution",),
    ("diagnosers", "interchange"),
    ("config",),
    ("studies",),
    ("report",),
    ("api", "cli", "agent_kit", "diagnoser_kit"),
)
"""cuer_agent's layers, lowest first (by the first name under `cuer_agent.`; the package
itself, whose lazy exports are the API's, is the top): a module imports its own layer
and those below, never one above (docs/development.md, "Layout")."""


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS)
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted({m.split(".")[1] for m in _import_graph()
                       if "." in m and not any(m.split(".")[1] in ls for ls in LAYERS)})
    assert unplaced == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(f"{a} -> {b}" for a, b in _import_graph().edges
                    if _layer(b) > _layer(a))
    assert upward == []


def test_a_study_room_imports_only_the_rooms_below_it() -> None:
    upward = []
    for a, b in _import_graph().edges():
        if a.startswith("cuer_agent.studies.") and b.startswith("cuer_agent.studies."):
            room, other = a.split(".")[2], b.split(".")[2]
            if room in STUDY_ROOMS_BELOW and other != room \
                    and other not in STUDY_ROOMS_BELOW[room]:
                upward.append((a, b))
    assert upward == []


def test_importing_the_backend_protocol_imports_no_http_client() -> None:
    code = ("import sys, cuer_agent.llm.backends; "
            "print(sorted(m for m in ('openai', 'ollama') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


REGISTRIES = {
    "backend": ("cuer_agent.llm.backends", "BACKENDS", "extractive"),
    "fault": ("cuer_agent.interventions._fault_types", "FAULTS", "empty_retrieval"),
    "condition": ("cuer_agent.interventions.conditions", "CONDITIONS", "remove"),
    "diagnoser": ("cuer_agent.diagnosers._base", "DIAGNOSERS", "coverage"),
    "dataset": ("cuer_agent.data._loaders", "LOADERS", "musique"),
}


def _registry_of(kind: str) -> _registry.Registry[Any]:
    import importlib

    module, attr, _ = REGISTRIES[kind]
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_every_registry_finds_its_built_ins_and_names_the_known_ones_on_a_miss(
        kind: str) -> None:
    registry = _registry_of(kind)
    assert REGISTRIES[kind][2] in registry.names()
    with pytest.raises(ConfigError, match=f"unknown {kind} 'nope'; choose from .*"
                                          f"{REGISTRIES[kind][2]}"):
        registry.get("nope")


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_every_registry_loads_third_parties_from_its_entry_point_group(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = _registry_of(kind)
    plugin = object()

    class EntryPoint:
        name = "third-party"

        def load(self) -> object:
            return plugin

    groups: list[str] = []

    def fake_entry_points(group: str) -> list[EntryPoint]:
        groups.append(group)
        return [EntryPoint()]

    monkeypatch.setattr(_registry, "entry_points", fake_entry_points)
    fresh: _registry.Registry[Any] = _registry.Registry(kind, registry.group, registry.builtins)
    assert fresh.get("third-party") is plugin
    assert groups == [f"cuer_agent.{kind}s"] == [registry.group]


def test_a_name_registered_by_a_built_in_is_not_replaced_by_an_entry_point(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class EntryPoint:
        name = "known"

        def load(self) -> str:
            return "theirs"

    monkeypatch.setattr(_registry, "entry_points", lambda group: [EntryPoint()])
    registry: _registry.Registry[str] = _registry.Registry("thing", "cuer_agent.things")
    registry.add("known", "ours")
    assert registry.get("known") == "ours"


def test_an_entry_point_naming_a_module_only_imports_it(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    import types

    registry: _registry.Registry[str] = _registry.Registry("thing", "cuer_agent.things")
    module = types.ModuleType("their_things")

    class EntryPoint:
        name = "their-things"

        def load(self) -> types.ModuleType:
            registry.add("their-thing", "registered by its decorator")
            return module

    monkeypatch.setattr(_registry, "entry_points", lambda group: [EntryPoint()])
    assert registry.names() == ["their-thing"]


EDGE_MODULES = ("cuer_agent._json", "cuer_agent.run_dir", "cuer_agent.interchange.",
                "cuer_agent.llm.", "cuer_agent.data.", "cuer_agent.metrics.official",
                "cuer_agent.agents", "cuer_agent.graphs.server")
"""Where JSON crosses into or out of the program untyped: run directories' JSONL and
config files, the interchange's spans, HTTP bodies and the response cache, data set and
prediction files, a LangGraph graph's state (a user's agent, and the server's HTTP body
and checkpoint)."""


def _is_edge(module: str) -> bool:
    return any(module == e or (e.endswith(".") and module.startswith(e))
               for e in EDGE_MODULES)


def _imports_name(path: Path, module: str, name: str) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.module == module
               and any(alias.name == name for alias in node.names)
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_an_untyped_json_object_is_named_only_at_the_edges() -> None:
    inward = sorted(name for name, path in _modules().items() if not _is_edge(name)
                    and _imports_name(path, "cuer_agent._json", "JsonObject"))
    assert inward == []


def _untyped_public_signatures(path: Path) -> list[str]:
    """`module:line name` of each public function whose parameters or return mention
    `dict[str, Any]`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                and not node.name.startswith("_"):
            args = node.args
            annotations = [a.annotation for a in (*args.posonlyargs, *args.args,
                                                  *args.kwonlyargs, args.vararg, args.kwarg)
                           if a is not None and a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
            if any("dict[str, Any]" in ast.unparse(a) for a in annotations):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return found


def test_no_public_function_outside_the_edges_takes_or_returns_an_untyped_dict() -> None:
    found = [hit for name, path in _modules().items() if not _is_edge(name)
             for hit in _untyped_public_signatures(path)]
    assert found == []

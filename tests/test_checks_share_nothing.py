"""The consistency checker shares no function with the agent it judges.

A judge that reads text with the agent's own functions finds that agent's errors by
construction (a planner's stopping rule reused as a completeness check finds every forced
early stop) and is blind to other agents'. These tests import both sides and fail if a
function object is reachable from both, or if the judge's modules reach an agent module
through their imports.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import pytest

JUDGE = ("cuer_agent.diagnosers._checks", "cuer_agent.diagnosers._check_words",
         "cuer_agent.diagnosers._rule_checks", "cuer_agent.diagnosers.consistency")
AGENT = ("cuer_agent.llm.extractive", "cuer_agent.llm._reading", "cuer_agent.llm._questions",
         "cuer_agent.llm._text", "cuer_agent.llm._compare", "cuer_agent.graphs.nodes",
         "cuer_agent.graphs.state", "cuer_agent.graphs.agent", "cuer_agent.graphs.single_shot")


def _functions(module_name: str) -> dict[int, str]:
    """Every cuer_agent function a module defines or imports, by identity — but the
    judge's own (each judge module imports the others')."""
    module = importlib.import_module(module_name)
    return {id(v): f"{module_name}.{k}" for k, v in vars(module).items()
            if isinstance(v, types.FunctionType)
            and v.__module__.startswith("cuer_agent") and v.__module__ not in JUDGE}


def _imports(module_name: str) -> set[str]:
    """The cuer_agent modules one module's source imports (relative imports resolved)."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    package = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return {m for m in found if m.startswith("cuer_agent") and _is_module(m)}


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imports(name) - seen)
    return seen


@pytest.mark.parametrize("judge", JUDGE)
def test_a_judge_module_holds_no_function_of_the_agent(judge: str) -> None:
    agent = {}
    for name in AGENT:
        agent.update(_functions(name))
    shared = sorted(f"{name} is {agent[key]}" for key, name in _functions(judge).items()
                    if key in agent)
    assert not shared, shared


@pytest.mark.parametrize("judge", JUDGE)
def test_a_judge_module_reaches_no_agent_module_through_its_imports(judge: str) -> None:
    assert not _reachable(judge) & set(AGENT), sorted(_reachable(judge) & set(AGENT))

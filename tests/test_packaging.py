"""The package as shipped: every folder with Python in it a package of the wheel, the agents
and diagnosers at the top level installed under `cuer_agent`, every file at one path (no
symlinks), and the sdist holding what a source user needs to run the tests,
the studies and `langgraph dev`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from package_layout import MAPPED, ROOT, SETUPTOOLS, package_folders

CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


SKIPPED = {".git", ".venv", "build", "dist", "__pycache__", ".cuer-cache", ".pytest_cache",
           ".mypy_cache", ".ruff_cache", ".hypothesis", "cuer_agent.egg-info"}


def _source_tree() -> list[Path]:
    paths = []
    for folder, dirs, files in os.walk(ROOT):  # lists a symlinked folder, never enters it
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        paths += [Path(folder, name) for name in dirs + files]
    return paths


def test_no_file_of_the_source_tree_is_a_symlink() -> None:
    # a checkout without symlink support would get text files, and tools that skip links
    # would miss the modules behind them
    assert [str(p.relative_to(ROOT)) for p in _source_tree() if p.is_symlink()] == []


def test_the_sdist_manifest_ships_what_the_tests_and_studio_read() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split("\n")
    for line in ("graft tests", "graft configs", "graft benchmarks", "graft examples",
                 "graft docs", "include langgraph.json"):
        assert line in manifest, line


def test_every_folder_with_python_in_it_is_a_package_of_the_wheel() -> None:
    # setuptools' finder cannot name graphs/ cuer_agent.graphs, so pyproject lists the
    # packages: a new folder missing from the list would be left out of the wheel
    assert set(SETUPTOOLS["packages"]) == set(package_folders())


def test_the_agents_and_the_diagnosers_live_at_the_top_level_only() -> None:
    # one address per file: the design card's graphs/ and diagnosers/, nothing under
    # cuer_agent/ of the same name
    assert {p: f.relative_to(ROOT).as_posix() for p, f in MAPPED.items()} == {
        "cuer_agent.graphs": "graphs", "cuer_agent.diagnosers": "diagnosers"}
    assert not (ROOT / "cuer_agent" / "graphs").exists()
    assert not (ROOT / "cuer_agent" / "diagnosers").exists()
    assert {"agent.py", "server.py", "spec.py"} <= {p.name for p in (ROOT / "graphs").iterdir()}
    assert {"consistency.py", "frozen_hop.py", "suffix_regen.py", "_checks.py"} <= {
        p.name for p in (ROOT / "diagnosers").iterdir()}


def test_the_installed_modules_are_the_top_level_files() -> None:
    from cuer_agent.diagnosers import consistency
    from cuer_agent.graphs import agent

    assert Path(agent.__file__).resolve() == ROOT / "graphs" / "agent.py"
    assert Path(consistency.__file__).resolve() == ROOT / "diagnosers" / "consistency.py"


def test_no_rule_of_a_diagnoser_lives_in_the_readers_room() -> None:
    assert sorted(p.name for p in (ROOT / "cuer_agent" / "llm").glob("_check*.py")) == []


def test_mypy_checks_every_folder_under_its_import_name() -> None:
    # .ci/mypy gives graphs/ and diagnosers/ files the names they install as
    assert CONFIG["tool"]["mypy"]["files"] == ["cuer_agent", "graphs", "diagnosers"]
    assert "check mypy .venv/bin/python .ci/mypy" in (ROOT / ".ci" / "run").read_text(
        encoding="utf-8")

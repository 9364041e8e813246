"""The package as shipped: every subpackage found without a hand-written list, every file at
one path (no symlinks), and the sdist holding what a source user needs to run the tests,
the studies and `langgraph dev`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parents[1]
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
    setuptools = CONFIG["tool"]["setuptools"]
    assert "package-dir" not in setuptools and set(setuptools["packages"]) == {"find"}
    find = setuptools["packages"]["find"]  # no hand-written list
    found = set(find_namespace_packages(str(ROOT), include=find["include"]))
    folders = {".".join(Path(d).relative_to(ROOT).parts)
               for d, _, files in os.walk(ROOT / "cuer_agent")
               if any(f.endswith(".py") for f in files)}
    assert found == folders
    assert {"cuer_agent.graphs", "cuer_agent.diagnosers", "cuer_agent.interchange"} <= found


def test_mypy_checks_each_file_once_under_its_import_name() -> None:
    assert CONFIG["tool"]["mypy"]["files"] == ["cuer_agent"]

"""The installed package: every subpackage found without a hand-written list, and the
top-level `graphs/` and `diagnosers/` shipped (and type-checked) as `cuer_agent.graphs` and
`cuer_agent.diagnosers` through relative symlinks."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_subpackages_are_symlinks_to_the_top_level_folders() -> None:
    for name in ("graphs", "diagnosers"):
        link = ROOT / "cuer_agent" / name
        assert link.is_symlink(), f"cuer_agent/{name} must be a symlink to ../{name}"
        assert os.readlink(link) == f"../{name}"  # relative: works in any clone
        assert link.resolve() == (ROOT / name).resolve()


def test_every_folder_with_python_in_it_is_a_package_of_the_wheel() -> None:
    setuptools = CONFIG["tool"]["setuptools"]
    assert "package-dir" not in setuptools and set(setuptools["packages"]) == {"find"}
    find = setuptools["packages"]["find"]  # no hand-written list
    found = set(find_namespace_packages(str(ROOT), include=find["include"]))
    folders = {".".join(Path(d).relative_to(ROOT).parts)
               for d, _, files in os.walk(ROOT / "cuer_agent", followlinks=True)
               if any(f.endswith(".py") for f in files)}
    assert found == folders
    assert {"cuer_agent.graphs", "cuer_agent.diagnosers", "cuer_agent.interchange"} <= found


def test_mypy_checks_each_file_once_under_its_import_name() -> None:
    # graphs/ and diagnosers/ are reached through cuer_agent/: listing them too would
    # check each file twice (as `graphs.state` and `cuer_agent.graphs.state`)
    assert CONFIG["tool"]["mypy"]["files"] == ["cuer_agent"]

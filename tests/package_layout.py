"""Where each module of the installed package lives in the checkout.

`cuer_agent/` holds the core; the repository's top-level `graphs/` and `diagnosers/`
install as `cuer_agent.graphs` and `cuer_agent.diagnosers` (`[tool.setuptools]
package-dir` in pyproject.toml). The tests that walk the source (the import graph, the
packaging checks) read that mapping here, once.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "tool"]["setuptools"]
MAPPED: dict[str, Path] = {package: ROOT / folder
                           for package, folder in SETUPTOOLS["package-dir"].items()}
"""Package name → the top-level folder it installs from."""
FOLDERS: dict[str, Path] = {"cuer_agent": ROOT / "cuer_agent", **MAPPED}
"""Every folder the package is made of, under the package name of its top."""


def package_folders() -> dict[str, Path]:
    """Every folder with Python in it, under the package name it installs as."""
    found = {}
    for package, top in FOLDERS.items():
        for folder, _, files in os.walk(top):
            if any(f.endswith(".py") for f in files) and "__pycache__" not in folder:
                parts = Path(folder).relative_to(top).parts
                found[".".join((package, *parts))] = Path(folder)
    return found


def package_modules() -> dict[str, Path]:
    """Every module of the package (its `__init__` named as the package), by import name."""
    modules = {}
    for package, folder in package_folders().items():
        for path in sorted(folder.glob("*.py")):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules

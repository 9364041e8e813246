"""Where a summary came from: `summary.provenance` = {command, version, commit,
data_sha256, python, platform}.

* `command` — the command as given, with only the options that can change the results
  (execution settings — run directory, cache, progress, concurrency, executor, workers —
  leave the results byte-identical, so they are left out and the same study run
  anywhere records the same command);
* `version` — the installed cuer-agent version;
* `commit` — the git commit of the cuer-agent source when it runs from a git checkout
  (`+dirty` when tracked files differ from it), else None;
* `data_sha256` — the sha256 of the data file, when the data came from one;
* `python`, `platform` — the interpreter and the machine.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from cuer_agent._part import Part

PACKAGE_DIR = Path(__file__).resolve().parent


def package_version() -> str:
    try:
        return version("cuer-agent")
    except PackageNotFoundError:
        return "unknown"


def git_commit(where: Path = PACKAGE_DIR) -> str | None:
    """HEAD of the git checkout holding `where` (+dirty with tracked changes), or None."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if not head:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def file_sha256(path: str | Path | None) -> str | None:
    """The file's sha256, or None when there is no file. Computed once per process for
    an unchanged file (a 5 GB model takes ~10 s to hash)."""
    if path is None or not Path(path).is_file():
        return None
    stat = Path(path).stat()
    return _sha256(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Provenance(Part):
    """Where the summary came from (`cuer_agent.provenance`)."""

    command: str
    """The command, with only the options that can change the results."""
    version: str
    """The installed cuer-agent version."""
    commit: str | None
    """The git commit of the cuer-agent source (`+dirty` with tracked changes); null
    outside a git checkout."""
    data_sha256: str | None
    """sha256 of the data file, when the data came from one."""
    python: str
    """The Python version."""
    platform: str
    """The machine (`platform.platform()`)."""


def provenance(command: str, data_path: str | Path | None = None) -> Provenance:
    return Provenance(command=command, version=package_version(), commit=git_commit(),
                      data_sha256=file_sha256(data_path), python=platform.python_version(),
                      platform=platform.platform())

"""The refactor guarantee: `evaluate`, `cuer` and `run` write the same bytes as the
committed digest of a small run (`tests/data/output_digests.json`).

Hashed: every JSONL file, each `config.json`, and each `summary.json` without its
`provenance` block (commit, Python and platform vary by machine). Not hashed: the
reports (rendered from the summary), figures (matplotlib's bytes vary by version) and
`ledger.json` (wall-clock latencies). After a change that *means* to change outputs, run
``CUER_UPDATE_DIGESTS=1 pytest tests/test_output_digest.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuer_agent.cli import app

DIGESTS = Path(__file__).parent / "data" / "output_digests.json"
COMMANDS = {
    "evaluate": ["evaluate", "--hops", "3", "--n", "8"],
    "cuer": ["cuer", "--dataset", "synthetic", "--n", "8"],
    "run": ["run", "--dataset", "synthetic", "--n", "8"],
}


def _digest(path: Path) -> str:
    if path.name == "summary.json":
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary.pop("provenance", None)
        data = json.dumps(summary, sort_keys=True).encode()
    else:
        data = path.read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def _outputs(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): _digest(p) for p in sorted(out.rglob("*"))
            if p.suffix == ".jsonl" or p.name in ("config.json", "summary.json")}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_outputs_match_the_committed_digest(command: str, tmp_path: Path) -> None:
    out = tmp_path / command
    result = CliRunner().invoke(app, [*COMMANDS[command], "--out", str(out), "--no-cache",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    got = _outputs(out)
    stored = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    if os.environ.get("CUER_UPDATE_DIGESTS"):
        stored[command] = got
        DIGESTS.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n")
    assert got == stored.get(command), f"{command}: outputs differ from {DIGESTS.name}"

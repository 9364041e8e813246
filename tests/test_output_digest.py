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
from conftest import CUER, EVALUATE, RUN, Studies

DIGESTS = Path(__file__).parent / "data" / "output_digests.json"
COMMANDS = {"evaluate": EVALUATE, "cuer": CUER, "run": RUN}
"""Each run once per session (`studies`), shared with the modules that read it."""
pytestmark = pytest.mark.background(EVALUATE)  # made in the background lane


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
def test_outputs_match_the_committed_digest(command: str, studies: Studies) -> None:
    got = _outputs(studies.get(*COMMANDS[command]))  # run with --no-cache --no-progress
    stored = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    if os.environ.get("CUER_UPDATE_DIGESTS"):
        stored[command] = got
        DIGESTS.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n")
    assert got == stored.get(command), f"{command}: outputs differ from {DIGESTS.name}"

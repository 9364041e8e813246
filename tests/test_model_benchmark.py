"""A language model's own failures as the yardstick, scored from the committed files.

`benchmarks/data/qwen2.5-coder-1.5b-musique/` holds the 1.5B agent's traces on the shared
MuSiQue records (`spans.jsonl.gz`) and their labels from the gold chain (`labels.jsonl`),
made by `benchmarks/model_batch.py` (see its PROVENANCE.md). Here every trace-reading
diagnoser is scored on them, in the fast lane, from the files alone (no model, no data
set), and `docs/results.md` must quote the table this scoring gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "data" / "qwen2.5-coder-1.5b-musique"
RESULTS = ROOT / "docs" / "results.md"
START, END = "<!-- model-benchmark: start -->", "<!-- model-benchmark: end -->"

pytestmark = pytest.mark.skipif(not (BENCH / "spans.jsonl.gz").exists(),
                                reason=f"no model benchmark committed at {BENCH}")


def _share(cell: dict[str, Any] | None) -> str:
    if cell is None:  # labels without every hop's verdict
        return "—"
    mean, ci = cell["mean"], cell["ci"]
    if mean is None:
        return "—"
    return f"{mean:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def results_table(summary: dict[str, Any]) -> str:
    """The table `docs/results.md` quotes: every diagnoser's pooled, balanced and κ
    figures, whether it names a wrong hop, per depth, and its clean blame, beside the
    constants."""
    scored = {name: d["scored"] for name, d in summary["diagnosers"].items() if "scored" in d}
    depths = sorted({h for s in scored.values() for h in s["by_depth"]}, key=int)
    lines = ["| diagnoser | n | pooled | balanced | κ | names a wrong hop | "
             + " | ".join(f"hop {h}" for h in depths) + " | clean blame |",
             "|---|---|---|---|---|---|" + "---|" * len(depths) + "---|"]
    for name, s in scored.items():
        cells = []
        for h in depths:
            cell = s["by_depth"].get(h)
            cells.append("—" if cell is None or cell["acc"] is None
                         else f"{cell['acc']:.2f} ({cell['n']})")
        clean = s["clean_blame_rate"]
        lines.append(f"| {name}{' (constant)' if s['constant'] else ''} | {s['n']} | "
                     f"{_share(s['exact_hop_acc'])} | {_share(s['balanced'])} | "
                     f"{_share(s['kappa'])} | {_share(s.get('wrong_hop_acc'))} | "
                     + " | ".join(cells)
                     + f" | {'—' if clean is None else f'{clean:.2f}'} |")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("model-benchmark") / "diagnosed"
    code, text, err = cli("diagnose", "--traces", BENCH / "spans.jsonl.gz",
                          "--labels", BENCH / "labels.jsonl", "--hops", "4",
                          "--out", out, "--no-cache")
    assert code == 0, text + err
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_every_trace_reading_diagnoser_is_scored_on_every_failure(
        scored: dict[str, Any]) -> None:
    labels = [json.loads(line) for line in (BENCH / "labels.jsonl").read_text().splitlines()]
    failed = sum(label["outcome"] == "failed" for label in labels)
    assert failed > 0 and scored["labels"]["scored_failed"] == failed
    for name in ("consistency", "coverage", "first-hop", "last-hop", "trace-rule", "chance"):
        entry = scored["diagnosers"][name]["scored"]
        assert entry["n"] == failed
        assert {"balanced", "kappa", "constant"} <= set(entry)


def test_the_results_page_quotes_the_table_the_files_give(scored: dict[str, Any]) -> None:
    text = RESULTS.read_text(encoding="utf-8")
    assert START in text and END in text, f"docs/results.md lacks {START} … {END}"
    quoted = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert quoted == results_table(scored), (
        "docs/results.md quotes another table than the committed benchmark gives; paste:\n"
        + results_table(scored))

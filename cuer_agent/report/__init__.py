"""The evaluate report: `report.md` and a self-contained `report.html` built from an
evaluate run directory's `summary.json`.

Both files (and the PNG figures `report.md` links in `report_figures/`) are a pure
function of the summary: rebuilding from the same summary gives the same bytes.
`write_report` reads the summary as its model (`EvaluateSummary`); `build_report`
renders one (a part that holds nothing says "Not run").

    from cuer_agent.report import write_report
    md_path, html_path = write_report(Path("runs/eval"))
"""

from __future__ import annotations

import os
from pathlib import Path

from cuer_agent.errors import DataError
from cuer_agent.report._render import FIGURE_DIR, Block, Figure, Row, to_html, to_markdown
from cuer_agent.report._sections import all_sections
from cuer_agent.studies.schemas import EvaluateSummary, read_summary

__all__ = ["build_report", "write_report"]

TITLE = "cuer-agent evaluation report"


def build_report(summary: EvaluateSummary) -> tuple[str, str, dict[str, bytes]]:
    """(markdown, html, {figure file name: PNG bytes}) for one evaluate summary."""
    blocks: list[Block] = all_sections(summary)
    figures = {f"{b.name}.png": b.png
               for b in [*blocks, *(x for r in blocks if isinstance(r, Row) for x in r.blocks)]
               if isinstance(b, Figure)}
    return to_markdown(blocks), to_html(blocks, TITLE), figures


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_report(run_dir: Path) -> tuple[Path, Path]:
    """Read `run_dir/summary.json`; write `report.md`, `report.html` and the figures in
    `report_figures/`. Returns the paths of the two reports.

    The summary must validate as an `EvaluateSummary`
    (`cuer_agent.studies.schemas`): otherwise a `DataError` names the file and the
    first bad key, and nothing is written."""
    run_dir = Path(run_dir)
    path = run_dir / "summary.json"
    if not path.exists():
        raise DataError(path, "no such file (not an evaluate run directory)")
    summary = read_summary(path, EvaluateSummary)
    markdown, page, figures = build_report(summary)
    fig_dir = run_dir / FIGURE_DIR
    fig_dir.mkdir(exist_ok=True)
    for stale in sorted(fig_dir.glob("*.png")):
        if stale.name not in figures:
            stale.unlink()
    for name, png in figures.items():
        _write(fig_dir / name, png)
    md_path, html_path = run_dir / "report.md", run_dir / "report.html"
    _write(md_path, markdown.encode("utf-8"))
    _write(html_path, page.encode("utf-8"))
    return md_path, html_path

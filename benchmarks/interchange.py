"""Export and import speed: a whole `evaluate` run as OpenInference spans and back.

    python benchmarks/interchange.py [--run DIR] [--repeats 3]

Without `--run`, runs `cuer-agent evaluate --hops 3` (the default, n = 100) into a
temporary directory first. Prints min / median / max wall time of: export (run directory →
OTLP/JSON lines), import (file → traces, exact mapping) and `diagnose --traces` with the
six trace-only diagnosers (import + diagnose + summary), with the file size and the
number of traces.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from cuer_agent.cli import app
from cuer_agent.interchange import export_run, import_spans, read_spans


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), max(times)


def _cli(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    if result.exit_code != 0:
        raise SystemExit(result.stdout + result.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            _cli("evaluate", "--hops", "3", "--out", str(run), "--no-cache", "--no-progress")
        spans = Path(tmp) / "spans.jsonl"
        export = timed(lambda: export_run(run, spans), args.repeats)
        imported = timed(lambda: import_spans(read_spans(spans)), args.repeats)
        diagnose = timed(lambda: _cli("diagnose", "--traces", str(spans), "--out",
                                      str(Path(tmp) / "d"), "--no-cache"), args.repeats)
        n = len(import_spans(read_spans(spans))[0])
        size = spans.stat().st_size / 1e6
    print(f"{n} traces, {size:.1f} MB of OTLP/JSON")
    for name, (lo, mid, hi) in (("export", export), ("import", imported),
                                ("diagnose (6 trace-only)", diagnose)):
        print(f"{name:>24}: {mid:6.2f} s median (min {lo:.2f}, max {hi:.2f}); "
              f"{n / mid:,.0f} traces/s")


if __name__ == "__main__":
    main()

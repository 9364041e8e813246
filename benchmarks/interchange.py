"""Export and import speed: a whole `evaluate` run as OpenInference spans and back.

    python benchmarks/interchange.py [--run DIR] [--repeats 3]
    python benchmarks/interchange.py --smoke     # evaluate n = 2, 2 hops, 1 fault,
                                                 # 2 diagnosers; 1 repeat: CI's run

Without `--run`, runs `cuer-agent evaluate --hops 3 --n 100` (`--hops`, `--n`,
`--faults`, `--diagnosers`) into a temporary directory first; everything it writes
(the run, the spans, the diagnosis) is in that directory, removed at the end. Prints
min / median / max wall time of: export (run directory → OTLP/JSON lines), import (file
→ traces, exact mapping) and `diagnose --traces` with the six trace-only diagnosers
(import + diagnose + summary), with the file size and the number of traces.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _smoke import parse_args
from typer.testing import CliRunner

from cuer_agent.cli import app
from cuer_agent.interchange import export_run, import_spans, read_spans

SMOKE = {"n": 2, "hops": 2, "faults": "empty_retrieval", "diagnosers": "coverage,first-hop",
         "repeats": 1}


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Min, median and max wall time of `fn()` over `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), max(times)


def _cli(*args: str) -> None:
    """`cuer-agent ARGS` in this process; exits with its output if it failed."""
    result = CliRunner().invoke(app, list(args))
    if result.exit_code != 0:
        raise SystemExit(result.stdout + result.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, help="an existing run directory to export")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=100, help="evaluate --n (without --run)")
    parser.add_argument("--hops", type=int, default=3, help="evaluate --hops (without --run)")
    parser.add_argument("--faults", default=None, help="evaluate --faults (default all)")
    parser.add_argument("--diagnosers", default=None, help="evaluate --diagnosers")
    args = parse_args(parser, SMOKE)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            _cli("evaluate", "--hops", str(args.hops), "--n", str(args.n), "--out", str(run),
                 "--no-cache", "--no-progress",
                 *(["--faults", args.faults] if args.faults else []),
                 *(["--diagnosers", args.diagnosers] if args.diagnosers else []))
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

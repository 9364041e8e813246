"""The benchmarks' one command-line convention for a smoke run: `--smoke`.

Every benchmark under `benchmarks/` takes `--smoke`: the same measurement, printed the
same way, at a size that runs in seconds, so that CI runs every benchmark
(`tests/test_benchmarks.py`) and a broken one fails a lane instead of waiting for the
next person who runs it by hand. Each script names its smoke sizes (a mapping from its
options' destinations to their smoke values); `--help` lists them. A flag given
explicitly wins over its smoke size: `--smoke --n 4` is the smoke run at n = 4.

Not a benchmark itself (its name starts with `_`); the servers `latency_server.py` and
`chaos_server.py` take no `--smoke` either — they are smoke-run by the benchmarks that
start them (`throughput.py`, `chaos.py`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence


def parse_args(parser: argparse.ArgumentParser, smoke: Mapping[str, object],
               argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Add `--smoke` to `parser` and parse `argv` (default: the command line). With
    `--smoke`, every option in `smoke` that was not given takes its smoke value."""
    sizes = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in smoke.items())
    parser.add_argument("--smoke", action="store_true",
                        help=f"a smoke run that takes seconds (CI runs it): {sizes}; "
                        "flags given explicitly win")
    args = parser.parse_args(argv)
    if args.smoke:
        unknown = set(smoke) - set(vars(args))
        if unknown:
            raise ValueError(f"smoke sizes for options this parser lacks: {sorted(unknown)}")
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
    return args

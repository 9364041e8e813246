"""Fault tolerance of whole runs in processes of their own: a run and an evaluate against
a server with 30 % faults, 20 SIGKILLs of an evaluating process, and the API key.

These are the longest runs of the fault-tolerance tests: scenarios of
`tests/scenarios.py` that the background lane runs in subprocesses while the other tests
run (conftest); the tests here judge what they left, and run last (the module reads
only background scenarios). The misbehaving server is `benchmarks/chaos_server.py`
(see `tests/test_fault_tolerance.py`, which covers the same failures in this process).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import Background

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import chaos
from scenarios import (
    Pair,
    pair_of,
    parse_failure_steps,
    traces_by_id,
)

EXHAUSTED = "openai request failed after 4 attempt(s): HTTP 500"


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_cost(trace: dict[str, Any]) -> dict[str, Any]:
    """A repaired reply costs a second turn's tokens; everything else must be equal."""
    return {k: v for k, v in trace.items() if k != "cost"}


# --- 1. a run against a server with 30% faults -------------------------------------------------

@pytest.fixture(scope="module")
def run_pair(background: Background) -> Pair:
    """`run --n 12` against the chaos server, and the same run fault-free (the chaos seed:
    the first that injects every kind of fault; scenarios.chaos_pair)."""
    return pair_of(*background.result("chaos_run"))


@pytest.mark.background("chaos_run")
def test_run_under_chaos_completes_with_every_example_exactly_once(run_pair: Pair) -> None:
    clean = [r["trace"]["example_id"] for r in rows(run_pair.clean / "traces.jsonl")]
    chaotic = [r["trace"]["example_id"] for r in rows(run_pair.chaos / "traces.jsonl")]
    assert chaotic == clean and len(set(clean)) == 12
    summary = json.loads((run_pair.chaos / "summary.json").read_text())
    assert summary["n"] == 12 and sum(summary["status"].values()) == 12


def test_faults_that_were_retried_change_nothing_only_recorded_failures_do(
        run_pair: Pair) -> None:
    """Retries only delay a request: an example whose trace is `ok` is the clean run's
    trace; every example that differs carries the failure that made it differ."""
    clean = {r["trace"]["example_id"]: r["trace"] for r in rows(run_pair.clean / "traces.jsonl")}
    chaotic = [r["trace"] for r in rows(run_pair.chaos / "traces.jsonl")]
    for trace in chaotic:
        if trace["status"] == "ok":
            assert without_cost(trace) == without_cost(clean[trace["example_id"]])
    changed = [t for t in chaotic if without_cost(t) != without_cost(clean[t["example_id"]])]
    assert changed and all(t["status"] in ("parse_failure", "error") for t in changed)
    assert len(changed) < len(chaotic)


def test_parse_failures_are_recorded_as_steps_and_counted_in_the_ledgers(
        run_pair: Pair) -> None:
    traces = [r["trace"] for r in rows(run_pair.chaos / "traces.jsonl")]
    for trace in traces:
        assert (trace["status"] == "parse_failure") == (
            parse_failure_steps(trace) > 0 and not trace["error"])
    noted = sum(parse_failure_steps(t) for t in traces)
    summary = json.loads((run_pair.chaos / "summary.json").read_text())
    invocation = json.loads((run_pair.chaos / "ledger.json").read_text())
    # Each repair turn the server answered malformed again is one parse failure.
    assert noted == summary["ledger"]["parse_failures"] == invocation["parse_failures"] \
        == run_pair.faults["malformed_repair"] > 0
    assert summary["ledger"]["parse_failure_rate"] == round(
        noted / summary["ledger"]["requests"], 6)
    per_skill = summary["ledger"]["by_skill"].values()
    assert sum(s["parse_failures"] for s in per_skill) == noted
    assert sum(s["requests"] for s in per_skill) == summary["ledger"]["requests"]


def test_exhausted_retries_mark_the_example_error_with_the_reason(run_pair: Pair) -> None:
    traces = [r["trace"] for r in rows(run_pair.chaos / "traces.jsonl")]
    failed = [t for t in traces if t["status"] == "error"]
    # Only requests that fail on every attempt (poison) run out of retries: 500s, 429s
    # and stalls that clear within the attempts never fail an example.
    assert failed and all(t["error"] == EXHAUSTED for t in failed)
    assert run_pair.faults["poison"] == 4 * len(failed)
    summary = json.loads((run_pair.chaos / "summary.json").read_text())
    assert summary["status"]["error"] == len(failed)
    assert summary["errors"] == [{"example_id": t["example_id"], "error": t["error"]}
                                 for t in failed]
    invocation = json.loads((run_pair.chaos / "ledger.json").read_text())
    assert invocation["errors"] == len(failed)


def test_every_retry_is_counted_in_the_invocation_ledger(run_pair: Pair) -> None:
    """Every failed attempt is followed by a retry, except the last of a request that
    ran out of attempts."""
    invocation = json.loads((run_pair.chaos / "ledger.json").read_text())
    failed_attempts = sum(run_pair.faults[k] for k in ("500", "429", "timeout", "poison"))
    assert invocation["retries"] == failed_attempts - invocation["errors"] > 0


# --- 2. evaluate against the same server -------------------------------------------------------

@pytest.fixture(scope="module")
def eval_pair(background: Background) -> Pair:
    """`evaluate --n 4` (3 faults; coverage, an llm judge whose replies break the schema,
    chance) against the chaos server, and the same fault-free (scenarios.chaos_pair)."""
    return pair_of(*background.result("chaos_eval"))


@pytest.mark.background("chaos_eval")
def test_evaluate_under_chaos_writes_every_record_exactly_once(eval_pair: Pair) -> None:
    single = rows(eval_pair.chaos / "single_shot" / "records.jsonl")
    ids = [r["record"]["record_id"] for r in single]
    # the whole question of each of 4 examples, original + 5 conditions each
    assert len(ids) == len(set(ids)) == 4 * 6
    assert ids == [r["record"]["record_id"]
                   for r in rows(eval_pair.clean / "single_shot" / "records.jsonl")]
    agentic = rows(eval_pair.chaos / "agentic" / "records.jsonl")
    ids = [r["record"]["record_id"] for r in agentic]
    assert len(ids) == len(set(ids))
    done = Counter(r["record"]["example_id"] for r in agentic
                   if r["record"]["condition"] == "done")
    assert len(done) == 4 and set(done.values()) == {1}
    # A trace row for every record that ran, and none for a skipped one.
    ran = {r["record"]["record_id"] for r in agentic if r.get("metrics") is not None}
    traced = [r["record"]["record_id"] for r in rows(eval_pair.chaos / "agentic" / "traces.jsonl")]
    assert sorted(traced) == sorted(ran)
    # One diagnosis per diagnoser for every injected run that still failed and ended
    # normally (a run that ended in an error is counted apart, never diagnosed), and for
    # every clean run that answered correctly (the base rate of false blame).
    failed = {r["record"]["record_id"] for r in agentic
              if r.get("metrics") is not None and not r["metrics"]["correct"]
              and r.get("status") == "ok"
              and r["record"]["condition"] in ("empty_retrieval", "query_drift",
                                               "early_termination")}
    clean = {r["record"]["record_id"] for r in agentic
             if r["record"]["condition"] == "clean" and r["metrics"]["correct"]
             and r.get("status") == "ok"}
    assert any(r.get("status") != "ok" for r in agentic if r.get("metrics"))  # chaos hit some
    diagnoses = Counter((d["record_id"], d["diagnoser"])
                        for d in rows(eval_pair.chaos / "agentic" / "diagnoses.jsonl"))
    assert failed and clean and set(diagnoses.values()) == {1}
    assert set(diagnoses) == {(r, d) for r in failed | clean
                              for d in ("coverage", "llm-judge", "chance")}


def test_evaluate_under_chaos_differs_from_the_clean_run_only_where_a_failure_was_recorded(
        eval_pair: Pair) -> None:
    clean, chaotic = traces_by_id(eval_pair.clean), traces_by_id(eval_pair.chaos)
    differ = 0
    for key, trace in chaotic.items():
        if trace["status"] == "ok" and key in clean:
            assert without_cost(trace) == without_cost(clean[key]), key
        differ += trace["status"] != "ok"
    assert 0 < differ < len(chaotic)


def test_evaluate_summary_ledger_counts_parse_failures_and_errors(eval_pair: Pair) -> None:
    summary = json.loads((eval_pair.chaos / "summary.json").read_text())
    ledger = summary["ledger"]
    all_rows = [r for name in ("single_shot/traces.jsonl", "agentic/traces.jsonl")
                for r in rows(eval_pair.chaos / name)]
    for row in all_rows:  # a fork's trace repeats its prefix's notes; `spent` is its own
        assert row["spent"]["parse_failures"] <= parse_failure_steps(row["trace"])
        if row["record"]["condition"] in ("original", "clean"):
            assert row["spent"]["parse_failures"] == parse_failure_steps(row["trace"])
    assert ledger["parse_failures"] == sum(r["spent"]["parse_failures"] for r in all_rows) > 0
    errors = [r for r in all_rows if r["trace"]["status"] == "error"]
    assert all(r["trace"]["error"] == EXHAUSTED for r in errors)
    # Traces cut short by a server that never answered must be visible in the summary,
    # not only as wrong answers.
    assert ledger.get("errors") == len(errors) > 0
    assert any(caveat["text"].startswith(f"{len(errors)} trace(s) stopped early")
               for caveat in summary["caveats"])


def test_llm_judge_replies_that_break_the_schema_are_recorded_as_errors_in_a_whole_run(
        eval_pair: Pair) -> None:
    judged = [d for d in rows(eval_pair.chaos / "agentic" / "diagnoses.jsonl")
              if d["diagnoser"] == "llm-judge"]
    errors = [d for d in judged if d["error"]]
    valid = [d for d in judged if not d["error"]]
    assert errors and valid
    for d in errors:
        assert d["pred_hop"] is None and d["pred_stage"] is None
        assert d["error"].startswith(("JudgeParseFailure: ", f"BackendError: {EXHAUSTED}"))
    assert any(d["error"].startswith("JudgeParseFailure") for d in errors)
    for d in valid:
        assert d["pred_stage"] in ("retrieval", "tool", "answer", "none")
        assert 0 <= d["pred_hop"] <= d["n_hops"] + 1
    summary = json.loads((eval_pair.chaos / "summary.json").read_text())
    # the attribution summary counts the failed runs' errors; the ledger counts every one
    assert summary["diagnosers"]["llm-judge"]["errors"] == sum(
        1 for d in errors if d["fault"] != "none")
    assert summary["ledger"]["diagnoser_errors"] == len(errors)
    # Each diagnosis made one judge request, whether or not its reply could be used.
    assert all(d["calls"] == 1 for d in judged)
    assert summary["ledger"]["diagnoser_requests"] == len(judged)


# --- 3. SIGKILL at 20 points ----------------------------------------------------------------------

def cache_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return conn.execute("SELECT * FROM replies ORDER BY key").fetchall()


@pytest.mark.background("sigkill", first=True)  # the longest job: started first
def test_sigkill_at_20_points_then_resume_gives_the_uninterrupted_run_directory(
        background: Background) -> None:
    """The evaluating process (extractive backend, with a response cache) is SIGKILLed 20
    times — each time once its run directory has grown past a seeded random size and past
    where the previous process stopped, some at once (mid-write), some after a random
    delay (mid-computation) — and restarted with the same command; a last, fresh
    process (`python -m cuer_agent.cli`) finishes the run. The uninterrupted reference and
    the killed processes are forked from a pre-imported interpreter (`benchmarks/chaos.py`
    Zygote: the real CLI in a child process, without ~4 s of imports per restart). The
    processes run in the background lane (scenarios.sigkill); this test judges them."""
    out, kills = background.result("sigkill")
    assert kills["kills"] == 20 and len(set(kills["sizes"])) >= 10  # spread over the run
    final = kills["final"]
    assert final["returncode"] == 0, final["stderr"]

    ref, got = out / "reference", out / "killed"
    assert (got / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()
    diffs = chaos.row_differences(ref, got)
    # single_shot: traces, records; agentic: + diagnoses; natural: labels, unlabelled,
    # spans, diagnoses
    assert len(diffs) == 9
    for name, diff in diffs.items():
        assert diff["lost"] == diff["duplicated"] == diff["reordered"] == 0, (name, diff)
        assert (got / name).read_bytes() == (ref / name).read_bytes(), name
    for name in ("report.md", "single_shot/summary.json", "config.json"):
        assert (got / name).read_bytes() == (ref / name).read_bytes(), name
    assert chaos.leftovers(got) == [] and chaos.torn_files(got) == []
    # The SQLite response cache survives every kill: intact, and holding exactly the
    # replies of the uninterrupted run.
    assert cache_rows(out / "killed.sqlite") == cache_rows(out / "reference.sqlite")


# --- 4. the API key -----------------------------------------------------------------------------

@pytest.mark.background("api_key")
def test_api_key_never_reaches_run_files_cache_or_output(background: Background) -> None:
    """`run` and `evaluate` (separate processes, key in their environment) against a
    server that echoes the Authorization header in its error bodies and malformed
    replies: no byte of the key lands in a run directory, the cache or the output. (The
    processes run in the background lane, scenarios.api_key: their files are in runs/,
    their output in output/.)"""
    out, result = background.result("api_key")
    runs, output = out / "runs", out / "output"
    key, faults, auth = result["key"], result["faults"], set(result["auth"])
    for name, code in result["returncodes"].items():
        assert code == 0, (output / f"{name}.err").read_text()
    assert auth == {f"Bearer {key}"}  # the key was used...
    assert faults["500"] + faults["poison"] > 0 and faults["malformed"] > 0  # ...and echoed
    secret = key.split("SECRET-")[1].encode()
    leaks = [str(p) for p in runs.rglob("*") if p.is_file() and secret in p.read_bytes()]
    leaks += [f"output of {p.stem}" for p in sorted(output.iterdir())
              if secret in p.read_bytes()]
    assert leaks == []
    assert (runs / "run.sqlite").exists() and (runs / "evaluate" / "summary.json").exists()


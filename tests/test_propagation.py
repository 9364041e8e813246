"""The agentic fault-propagation study end to end (extractive backend, synthetic world)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PROPAGATE, QUIET, Studies, invoke, run_study

import cuer_agent
from cuer_agent.config import (
    DEFAULT_FAULTS,
    AgentSection,
    DataSection,
    PropagationConfig,
    StudyConfig,
)

pytestmark = pytest.mark.background(PROPAGATE)  # the shared study, made in the background lane


@pytest.fixture(scope="module")
def study(studies: Studies) -> Path:
    """The session's `propagate --hops 3 --n 6 --seed 7`: read only."""
    return studies.get(*PROPAGATE)


def summary_of(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_every_fault_is_applied_at_every_eligible_hop(study: Path) -> None:
    rows = [json.loads(line) for line in (study / "records.jsonl").open()]
    clean = {r["record"]["example_id"]: r["metrics"] for r in rows
             if r["record"]["condition"] == "clean"}
    cells = {(r["record"]["condition"], r["record"]["example_id"], r["record"]["hop"]): r
             for r in rows if r["record"]["condition"] in DEFAULT_FAULTS}
    for fault in DEFAULT_FAULTS:
        applied = 0
        for example_id, metrics in clean.items():
            for hop in (1, 2, 3):
                row = cells[(fault, example_id, hop)]  # one row per fault × example × hop
                eligible = metrics["correct"] and metrics["hops"] >= hop
                if eligible:
                    assert row["metrics"] is not None or not row["record"]["skipped"].startswith(
                        "clean "), (fault, example_id, hop)
                else:
                    assert row["record"]["skipped"].startswith("clean ")
                applied += row["metrics"] is not None
        assert applied > 0, fault


def test_forks_spend_nothing_on_the_prefix(study: Path) -> None:
    prefix = summary_of(study)["prefix_calls"]
    assert prefix["forks"] > 0
    assert prefix["total"] == 0 and prefix["max"] == 0


def test_recovery_is_recovered_over_injected(study: Path) -> None:
    for per_hop in summary_of(study)["faults"].values():
        for cell in per_hop.values():
            if cell["injected"]:
                assert cell["recovered"] + cell["failed"] == cell["injected"]
                assert cell["recovery"] == round(cell["recovered"] / cell["injected"], 6)


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").open()]


def traces(run: Path) -> dict[str, dict]:
    return {json.loads(line)["record"]["record_id"]: json.loads(line)["trace"]
            for line in (run / "traces.jsonl").open()}


def first_attempt(trace: dict, hop: int) -> dict | None:
    if hop > len(trace["hops"]):
        return None
    record = trace["hops"][hop - 1]
    return (record["attempts"] or [record])[0]


def test_an_injection_is_effective_when_hop_hs_first_attempt_changed(study: Path) -> None:
    by_id = traces(study)
    for row in records(study):
        rec, metrics = row["record"], row["metrics"]
        if rec["condition"] not in DEFAULT_FAULTS or metrics is None:
            continue
        clean = first_attempt(by_id[f"{rec['example_id']}/clean"], rec["hop"])
        fork = first_attempt(by_id[rec["record_id"]], rec["hop"])
        changed = (fork is None or clean is None or fork["finding"] != clean["finding"]
                   or set(fork["selected"]) != set(clean["selected"]))
        assert metrics["effective"] == float(changed), rec["record_id"]


def test_verify_and_the_control_are_recorded_for_every_fault_the_agent_can_retry(
        study: Path) -> None:
    for row in records(study):
        rec, metrics = row["record"], row["metrics"]
        if rec["condition"] not in DEFAULT_FAULTS or metrics is None:
            continue
        assert {"verify_fired", "first_hit"} <= set(metrics)
        forced = rec["condition"] == "early_termination"
        assert ("control_correct" in metrics) != forced, rec["record_id"]
        if metrics.get("control_same_run"):  # it never retried: its own control
            assert metrics["control_correct"] == metrics["correct"]


def test_the_summary_puts_the_retries_off_control_beside_recovery(study: Path) -> None:
    summary = summary_of(study)
    for per_hop in summary["faults"].values():
        for cell in per_hop.values():
            if not cell["effective"] or cell.get("forced"):
                continue
            control = cell["control"]
            assert control["n"] == cell["effective"]
            assert sum(cell["first_hit"].values()) == cell["injected"]
    verify = summary["verify"]
    assert verify["false_alarm"]["n"] > 0
    assert "early_termination" not in verify["detection"]
    assert set(summary["invisibility"]["faults"]) <= {*DEFAULT_FAULTS, "replace (per hop)"}


def test_tampering_outcomes_add_up_and_certificates_are_stored(study: Path) -> None:
    summary = summary_of(study)
    for cell in summary["tampering"].values():
        assert cell["resisted"] + cell["absorbed"] + cell["derailed"] == cell["injected"]
    rows = [json.loads(line) for line in (study / "records.jsonl").open()]
    tampered = [r for r in rows if r["record"]["condition"] == "content_tampering"
                and r["metrics"] is not None]
    for row in tampered:
        cert = row["record"]["certificate"]
        assert {"hop", "strategy", "original_span", "new_span", "documents_touched",
                "replacements"} <= set(cert)


def test_skips_are_counted_by_reason(study: Path) -> None:
    rows = [json.loads(line) for line in (study / "records.jsonl").open()]
    skipped_rows = [r for r in rows if r["metrics"] is None and r["record"]["condition"] != "done"]
    counted = sum(sum(v.values()) for v in summary_of(study)["skipped"].values())
    assert counted == len(skipped_rows)


def test_stage_transitions_are_weighted_edges(study: Path) -> None:
    transitions = summary_of(study)["stage_transitions"]
    assert set(transitions) == set(DEFAULT_FAULTS)
    for graph in transitions.values():
        for edge in graph["edges"]:
            assert edge["count"] > 0


def test_same_seed_gives_the_same_records_bytes(study: Path, tmp_path: Path) -> None:
    # PROPAGATE through the API: --seed seeds the world and the faults
    config = StudyConfig(data=DataSection(n=6, seed=7), agent=AgentSection(hops=3),
                         propagation=PropagationConfig(seed=7))
    cuer_agent.propagate(config, out=tmp_path / "again",
                         execution=cuer_agent.Execution(use_cache=False))
    assert (tmp_path / "again" / "records.jsonl").read_bytes() == \
        (study / "records.jsonl").read_bytes()
    assert (tmp_path / "again" / "summary.json").read_bytes() == \
        (study / "summary.json").read_bytes()


def test_any_record_replays_to_the_same_trace(study: Path) -> None:
    rows = [json.loads(line) for line in (study / "traces.jsonl").open()]
    for condition in ("query_drift", "content_tampering", "early_termination", "hop_remove"):
        row = next((r for r in rows if r["record"]["condition"] == condition), None)
        if row is None:
            continue
        result = invoke(["replay", str(study), "--record", row["record"]["record_id"],
                         "--no-cache"])
        assert result.exit_code == 0, result.output
        assert "identical" in result.stdout


def test_replaying_a_skipped_record_is_exit_2_giving_its_skip_reason(study: Path) -> None:
    rows = [json.loads(line) for line in (study / "records.jsonl").open()]
    skipped = next(r["record"] for r in rows if r["record"].get("skipped"))
    result = invoke(["replay", str(study), "--record", skipped["record_id"], "--no-cache"])
    assert result.exit_code == 2
    assert f"was skipped ({skipped['skipped']})" in result.output


def test_unknown_fault_is_exit_2_before_work(tmp_path: Path) -> None:
    code, text = run_study(PROPAGATE, tmp_path / "r", "--faults", "gremlins")
    assert code == 2 and "unknown fault" in text
    assert not (tmp_path / "r").exists()


def test_a_config_file_is_read_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[data]\nn = 3\nseed = 7\n\n[agent]\nhops = 2\nk = 4\n\n'
                      '[propagation]\nfaults = ["empty_retrieval"]\nstrict = false\n'
                      'hop_operators = false\n')

    def recorded(name: str, *flags: str) -> dict:
        result = invoke(["propagate", "--config", str(config), *flags, "--out",
                         str(tmp_path / name), *QUIET])
        assert result.exit_code == 0, result.output
        return json.loads((tmp_path / name / "config.json").read_text())

    used = recorded("file")
    assert (used["data"]["n"], used["data"]["seed"], used["data"]["hops"],
            used["hop_budget"], used["k"]) == (3, 7, 2, 2, 4)
    assert used["propagation"]["faults"] == ["empty_retrieval"]
    assert not used["propagation"]["strict"] and not used["propagation"]["hop_operators"]
    rows = [json.loads(line) for line in (tmp_path / "file" / "traces.jsonl").open()]
    record = next(row["record"]["record_id"] for row in rows if row.get("record"))
    result = invoke(["replay", str(tmp_path / "file"), "--record", record, "--no-cache"])
    assert result.exit_code == 0 and "identical" in result.stdout, result.output

    over = recorded("flags", "--n", "2", "--seed", "3", "--hops", "3", "--faults",
                    "query_drift", "--strict", "--hop-operators")
    assert (over["data"]["n"], over["data"]["seed"], over["data"]["hops"],
            over["hop_budget"]) == (2, 3, 3, 3)
    assert over["propagation"]["faults"] == ["query_drift"]
    assert over["propagation"]["seed"] == 3
    assert over["propagation"]["strict"] and over["propagation"]["hop_operators"]


def test_an_unknown_fault_in_the_config_is_exit_2_before_work(tmp_path: Path) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[propagation]\nfaults = ["gremlins"]\n')
    code, text = run_study(PROPAGATE, tmp_path / "r", "--config", str(config))
    assert code == 2 and "unknown fault" in text
    assert not (tmp_path / "r").exists()

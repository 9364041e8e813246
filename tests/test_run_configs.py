"""A run directory's `config.json`: one schema for every study command, read back typed
(`cuer_agent.studies._common.recorded_config`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import QUIET, Studies, invoke
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.errors import DataError
from cuer_agent.studies._common.recorded_config import (
    CuerRunConfig,
    EvaluateRunConfig,
    PropagateRunConfig,
    RecordedData,
    RunCommandConfig,
    absent_keys,
    read_run_config,
    validate_run_config,
)
from cuer_agent.studies.schemas import SCHEMA_DIR

SMALL = ["--n", "2", *QUIET]


def _invoke(*args: str) -> str:
    result = invoke([*args, *SMALL])
    assert result.exit_code == 0, result.output
    return result.output


def small(command: str) -> tuple[str, ...]:
    """A study command on 2 two-hop examples: each made once per session (`studies`).
    `cuer` runs no agent: it chooses the 2-hop questions by --gold-hops, with no budget."""
    return (command, "--gold-hops" if command == "cuer" else "--hops", "2", "--n", "2")


pytestmark = pytest.mark.background(*map(small, ("run", "cuer", "propagate", "evaluate")))


def test_every_study_command_writes_a_config_json_of_its_commands_shape(studies: Studies
                                                                        ) -> None:
    expected = {("run", ""): RunCommandConfig, ("cuer", ""): CuerRunConfig,
                ("propagate", ""): PropagateRunConfig, ("evaluate", ""): EvaluateRunConfig,
                ("evaluate", "single_shot"): CuerRunConfig,
                ("evaluate", "agentic"): PropagateRunConfig}
    for (command, part), model in expected.items():
        config = read_run_config(studies.get(*small(command)) / part)
        assert type(config) is model, (command, part)


def test_a_config_json_of_no_known_shape_is_one_error_naming_the_file_and_key(
        tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"command": "cuer", "source": "x"}))
    with pytest.raises(DataError) as err:
        read_run_config(tmp_path)
    message = str(err.value)
    assert "config.json" in message and "missing key 'data'" in message
    assert "\n" not in message


def test_replay_of_a_damaged_config_json_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"command": "propagate"}))
    result = invoke(["replay", str(tmp_path), "--record", "x/clean"])
    assert result.exit_code == 2
    assert "config.json" in result.output and "missing key" in result.output


def test_replay_of_a_config_naming_an_unknown_backend_exits_2_naming_file_and_key(
        tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({
        "command": "propagate", "source": "s", "hop_budget": 3, "retries_per_hop": 1,
        "data": {}, "backend": {"name": "nosuch"}, "propagation": {}}))
    result = invoke(["replay", str(tmp_path), "--record", "x/clean"])
    assert result.exit_code == 2
    assert "config.json: backend.name: unknown backend 'nosuch'" in result.output


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4, unique=True))
def test_gold_hops_read_back_the_same_whether_written_as_a_list_or_as_flags_spell_it(
        hops: list[int]) -> None:
    as_flag = RecordedData.model_validate({"gold_hops": ",".join(map(str, hops))})
    as_list = RecordedData.model_validate({"gold_hops": hops})
    assert as_flag.gold_hops == as_list.gold_hops == tuple(hops)


def test_a_propagate_config_without_k_reads_the_agents_default_k() -> None:
    config = validate_run_config({
        "command": "propagate", "source": "s", "hop_budget": 3, "retries_per_hop": 1,
        "data": {}, "backend": {}, "propagation": {}})
    assert isinstance(config, PropagateRunConfig) and config.k == 5


def test_an_evaluate_run_with_a_non_default_k_replays_its_agent_records_identically(
        tmp_path: Path) -> None:
    # Before recorded_config, evaluate's agentic/ config left k out and replay assumed 5.
    study = tmp_path / "study.toml"
    study.write_text("[agent]\nk = 3\nhops = 2\n")
    out = tmp_path / "evaluate"
    # One fault and one diagnoser: the agentic config and replay are what is checked.
    _invoke("evaluate", "--config", str(study), "--out", str(out),
            "--faults", "empty_retrieval", "--diagnosers", "chance")
    config = read_run_config(out / "agentic")
    assert isinstance(config, PropagateRunConfig) and config.k == 3
    first = json.loads((out / "agentic" / "traces.jsonl").read_text().splitlines()[0])
    result = invoke(["replay", str(out / "agentic"), "--record",
                                      first["record"]["record_id"], "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "identical" in result.output


def test_an_error_in_a_cuer_config_names_the_key_not_the_commands_tag(
        studies: Studies, tmp_path: Path) -> None:
    # the union's tag for a cuer config is "cuer", which is also a key of the file
    studies.copy(*small("cuer"), to=tmp_path / "cuer")
    path = tmp_path / "cuer" / "config.json"
    config = json.loads(path.read_text())
    config["backend"]["name"] = 5
    path.write_text(json.dumps(config))
    with pytest.raises(DataError, match=r"config\.json: backend\.name: "):
        read_run_config(tmp_path / "cuer")


def test_a_value_of_the_wrong_json_type_is_an_error_not_converted(studies: Studies,
                                                                  tmp_path: Path) -> None:
    studies.copy(*small("propagate"), to=tmp_path / "p")
    path = tmp_path / "p" / "config.json"
    config = json.loads(path.read_text())
    config["hop_budget"] = "2"
    path.write_text(json.dumps(config))
    with pytest.raises(DataError, match="hop_budget: Input should be a valid integer"):
        read_run_config(tmp_path / "p")


def test_propagate_with_gold_hops_writes_a_config_the_published_schema_accepts(
        tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    _invoke("propagate", "--hops", "2", "--gold-hops", "2", "--out", str(tmp_path / "p"))
    config = json.loads((tmp_path / "p" / "config.json").read_text())
    assert config["data"]["gold_hops"] == "2"
    jsonschema.validate(config, json.loads((SCHEMA_DIR / "config.schema.json").read_text()))
    recorded = read_run_config(tmp_path / "p")
    assert isinstance(recorded, PropagateRunConfig) and recorded.data.gold_hops == (2,)


@pytest.mark.parametrize(("key", "value", "says"), [
    ("hop_budget", 0, "hop_budget: Input should be greater than or equal to 1"),
    ("k", 0, "k: Input should be greater than or equal to 1"),
    ("propagation", {"faults": ["gremlins"]}, "propagation.faults: unknown fault 'gremlins'"),
])
def test_a_recorded_value_no_study_accepts_is_named_by_its_key(
        key: str, value: object, says: str) -> None:
    config = {"command": "propagate", "source": "s", "hop_budget": 3, "retries_per_hop": 1,
              "data": {}, "backend": {}, "propagation": {}, key: value}
    with pytest.raises(DataError, match=says):
        validate_run_config(config, "DIR/config.json")


def test_a_config_json_that_is_a_directory_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    result = invoke(["replay", str(tmp_path), "--record", "x/clean"])
    assert result.exit_code == 2 and "config.json: cannot be read" in result.output


def test_every_commands_config_records_every_key_its_writer_does_not_leave_out_by_design(
        studies: Studies) -> None:
    for command in ("run", "cuer", "propagate"):
        assert absent_keys(read_run_config(studies.get(*small(command)))) == [], command


def test_replay_that_differs_names_the_keys_a_hand_edited_config_lacks(studies: Studies,
                                                                      tmp_path: Path) -> None:
    out = studies.copy(*small("propagate"), to=tmp_path / "p")
    config = json.loads((out / "config.json").read_text())
    del config["data"]["hops"]  # 2-hop questions; the default asks 3-hop ones
    (out / "config.json").write_text(json.dumps(config))
    result = invoke(["replay", str(out), "--record", "syn-0-0/clean", "--no-cache"])
    assert result.exit_code == 1, result.output
    assert "DIFFERS" in result.output and "has no data.hops" in result.output

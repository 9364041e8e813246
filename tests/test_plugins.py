"""Plug-ins carry their metadata: a dummy backend, data set, fault and diagnoser, each
defined in `tests/plugin_dummies.py` with one registration call, show up wherever their
kind does — CLI help, config defaults and validation, a tiny run and a diagnosis, the
config schema — with no other file edited.

The registries are process-wide and the config defaults are read when `cuer_agent.config`
is imported, so the dummies are registered in a child process (`probe`), which reports
what it saw as JSON; the tests here read that report, one behaviour each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent

PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import plugin_dummies  # noqa: F401  (registers the dummies, before anything reads defaults)

from typer.testing import CliRunner

from cuer_agent.cli import app
from cuer_agent.config import BackendSection, StudyConfig, validate_config
from cuer_agent.data import canonical_name, is_generated
from cuer_agent.data._select import load_study_data
from cuer_agent.diagnosers import BaseDiagnoser, get_diagnoser, make_view
from cuer_agent.errors import ConfigError
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.config import PropagationConfig
from cuer_agent.interventions import FaultInput, get_fault
from cuer_agent.llm.backends import SkillClient, default_concurrency, make_backend
from cuer_agent.retrieval import BM25Retriever

out = {}
runner = CliRunner()
for command in ("evaluate", "propagate", "run"):
    out[f"help_{command}"] = runner.invoke(app, [command, "--help"],
                                           terminal_width=2000).output
out["default_diagnosers"] = list(StudyConfig().diagnose.names)
out["default_faults"] = list(PropagationConfig().faults)
out["config_schema"] = json.dumps(StudyConfig.model_json_schema())
out["concurrency"] = default_concurrency("dummy-backend")
try:
    validate_config({"backend": {"name": "dummy-backend", "threads": 2}}
                    ).backend.client_options(seed=0)
except ConfigError as exc:
    out["threads_error"] = str(exc)
options = BackendSection(name="dummy-backend").client_options(seed=7)
out["client_options"] = sorted(options)
out["canonical"] = canonical_name("dummy-alias")
out["generated"] = is_generated("dummy-alias")

data = load_study_data("dummy-alias", None, 2, 2, 0)
out["examples"] = [(ex.id, ex.n_hops) for ex in data.examples]
skills = SkillClient(make_backend("dummy-backend", **options))
out["decoding_seed"] = skills.backend.decoding_options["seed"]
run = Executor(skills, AgentConfig(hop_budget=2)).run(
    data.examples[0], BM25Retriever.from_passages(data.corpus or ()))
out["hops_run"] = len(run.trace.hops)
hop = run.trace.hops[0]
outcome = get_fault("dummy_fault").apply(FaultInput(
    example_id=run.example_id, question=data.examples[0].question, hop=1,
    subquery=hop.subquery, evidence=list(hop.retrieved),
    later_subqueries=[], corpus=[], seed=0))
out["fault_record"] = outcome.record.record_id
judge = get_diagnoser("dummy-diagnoser")
diagnosis = judge.diagnose(make_view(judge, run.trace, data.examples[0].answer), None)
out["diagnosis"] = [diagnosis.hop, diagnosis.stage]
out["stand_in_on_dummy"] = BaseDiagnoser(options={"skills": skills}).rule_based_backend()
extractive = SkillClient(make_backend("extractive"))
out["stand_in_on_extractive"] = BaseDiagnoser(
    options={"skills": extractive}).rule_based_backend()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    env = {**os.environ, "COLUMNS": "2000", "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(TESTS)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_cli_help_lists_each_dummy_with_its_help(seen: dict[str, Any]) -> None:
    assert "dummy-backend (a test double)" in seen["help_evaluate"]
    assert "dummy-data (a generated test double)" in seen["help_evaluate"]
    assert "dummy-diagnoser (blames hop 1)" in seen["help_evaluate"]
    assert "dummy_fault (changes nothing)" in seen["help_propagate"]


def test_cli_help_gives_the_dummy_backends_default_concurrency(seen: dict[str, Any]) -> None:
    assert "dummy-backend 3" in seen["help_run"]
    assert seen["concurrency"] == 3


def test_a_default_on_fault_and_diagnoser_join_the_config_defaults_in_rank_order(
        seen: dict[str, Any]) -> None:
    assert seen["default_faults"][-1] == "dummy_fault"
    assert seen["default_diagnosers"][-1] == "dummy-diagnoser"
    assert seen["default_diagnosers"][0] == "consistency"


def test_the_config_schema_lists_the_dummy_diagnoser_as_a_default(
        seen: dict[str, Any]) -> None:
    assert "dummy-diagnoser" in seen["config_schema"]


def test_a_backend_that_declares_no_threads_refuses_them_naming_those_that_do(
        seen: dict[str, Any]) -> None:
    assert seen["threads_error"] == "--threads applies to --backend llamacpp, not dummy-backend"


def test_a_backend_that_is_not_rule_based_gets_the_decoding_options(
        seen: dict[str, Any]) -> None:
    assert {"seed", "timeout", "max_tokens"} <= set(seen["client_options"])
    assert seen["decoding_seed"] == 7


def test_a_dataset_alias_resolves_and_a_generated_dataset_gets_the_worlds_options(
        seen: dict[str, Any]) -> None:
    assert seen["canonical"] == "dummy-data"
    assert seen["generated"] is True
    assert [hops for _, hops in seen["examples"]] == [2, 2]


def test_the_dummies_run_inject_and_diagnose(seen: dict[str, Any]) -> None:
    assert seen["hops_run"] >= 1
    assert seen["fault_record"].endswith("/dummy_fault@1")
    assert seen["diagnosis"] == [1, "retrieval"]


def test_only_a_rule_based_backend_makes_a_diagnoser_a_stand_in(seen: dict[str, Any]) -> None:
    assert seen["stand_in_on_dummy"] is None
    assert seen["stand_in_on_extractive"] == "extractive"

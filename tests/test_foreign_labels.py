"""Diagnosers scored on labelled foreign traces: a LangGraph agent we did not write
(`examples/foreign_labelled_traces.py`) on the shared MuSiQue sample, its spans from
openinference-instrumentation-langchain, scored through `diagnose --traces --labels`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import invoke

from cuer_agent.data import shared_sample_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

pytestmark = pytest.mark.shared_data


def _records(dataset: str) -> list[dict]:
    path = shared_sample_path(dataset)
    if path is None:
        pytest.skip(f"../shared/data not present: {dataset} sample missing")
    import foreign_labelled_traces as foreign

    return foreign.read_records(path, dataset)


def _score(tmp_path_factory: pytest.TempPathFactory, paraphrasing: bool,
           dataset: str = "musique") -> dict:
    pytest.importorskip("openinference.instrumentation.langchain",
                        reason="openinference-instrumentation-langchain is in the test extra")
    import foreign_labelled_traces as foreign

    out = tmp_path_factory.mktemp("foreign")
    records = _records(dataset)
    assert foreign.write(records, out, paraphrasing=paraphrasing) >= 40
    result = invoke([
        "diagnose", "--traces", str(out / "spans.jsonl"), "--labels", str(out / "labels.jsonl"),
        "--diagnosers", "consistency,trace-rule,chance,coverage", "--out", str(out / "d"),
        "--no-cache"])
    assert result.exit_code == 0, result.output
    return json.loads((out / "d" / "summary.json").read_text())


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _score(tmp_path_factory, paraphrasing=False)


@pytest.fixture(scope="module")
def paraphrased(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same agent whose reader says every note in a sentence of its own."""
    return _score(tmp_path_factory, paraphrasing=True)


@pytest.fixture(scope="module")
def paraphrased_2wiki(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The paraphrasing agent on 2Wiki's two-step chain questions."""
    return _score(tmp_path_factory, paraphrasing=True, dataset="2wiki")


def test_a_2wiki_chain_question_becomes_two_steps_in_musique_s_shape() -> None:
    import foreign_labelled_traces as foreign

    record = {"_id": "x", "type": "compositional", "answer": "Solothurn",
              "question": "Where was the father of Jean d'Estrées born?",
              "evidences": [["Jean d'Estrées", "father", "Jean II d'Estrées"],
                            ["Jean II d'Estrées", "place of birth", "Solothurn"]],
              "supporting_facts": [["Jean d'Estrées", 0], ["Jean II d'Estrées", 1]],
              "context": [["Other", ["A."]], ["Jean II d'Estrées", ["Born in", "Solothurn."]],
                          ["Jean d'Estrées", ["His father was Jean II d'Estrées."]]]}
    steps = foreign.from_2wiki(record)["question_decomposition"]
    assert [(s["question"], s["answer"], s["paragraph_support_idx"]) for s in steps] == [
        ("Jean d'Estrées >> father", "Jean II d'Estrées", 2),
        ("#1 >> place of birth", "Solothurn", 1)]
    assert foreign.from_2wiki({**record, "type": "comparison"}) is None


def test_consistency_names_more_than_one_hop_on_foreign_traces(scored: dict) -> None:
    blamed = scored["diagnosers"]["consistency"]["blame_hist"]
    assert max(blamed.values()) < 0.9 and len(blamed) >= 2


def test_consistency_beats_trace_rule_and_chance_on_foreign_traces(scored: dict) -> None:
    mine = scored["diagnosers"]["consistency"]["scored"]["exact_hop_acc"]
    rule = scored["diagnosers"]["trace-rule"]["scored"]["exact_hop_acc"]["mean"]
    chance = scored["labels"]["chance_expected"]["overall"]
    assert mine["ci"][0] > rule and mine["ci"][0] > chance


def test_consistency_is_no_constant_on_an_agent_whose_reader_paraphrases(
        paraphrased: dict) -> None:
    blamed = paraphrased["diagnosers"]["consistency"]["blame_hist"]
    assert max(blamed.values()) < 0.9 and len(blamed) >= 3


def test_consistency_blames_fewer_than_half_the_clean_runs_of_a_paraphrasing_agent(
        paraphrased: dict) -> None:
    assert paraphrased["diagnosers"]["consistency"]["scored"]["clean_blame_rate"] < 0.5


def test_consistency_blames_few_clean_runs_of_a_paraphrasing_agent_on_2wiki(
        paraphrased_2wiki: dict) -> None:
    assert paraphrased_2wiki["diagnosers"]["consistency"]["scored"]["clean_blame_rate"] < 0.5

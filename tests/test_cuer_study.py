"""The single-shot CUE-R study end to end: through the Python API (`cuer_agent.cuer`), and
through `cuer-agent cuer` where the command line itself is under test (extractive backend)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import Studies, invoke, run_study
from typer.testing import Result

import cuer_agent
from cuer_agent.config import CuerConfig, DataSection, StudyConfig
from cuer_agent.trace import evidence_id

CONDITIONS = ("original", "remove", "replace", "duplicate", "zero_retrieval", "random_target")
AXES = ("correctness", "em", "f1", "grounding", "confidence_error", "divergence")


OFFLINE = cuer_agent.Execution(use_cache=False, progress=False)
"""No response cache, no progress bar: what the tests' study calls run with."""

CUER = ("cuer", "--dataset", "synthetic", "--gold-hops", "2", "--n", "8", "--seed", "3")


@pytest.fixture(scope="module")
def study(studies: Studies) -> Path:
    """The session's run of CUER: read only (`studies.copy` for one to cut back)."""
    return studies.get(*CUER)


def _cuer_config(**ablations: bool) -> StudyConfig:
    """CUER as the Python API takes it (--seed seeds the data and the interventions)."""
    return StudyConfig(data=DataSection(gold_hops=(2,), n=8, seed=3),
                       cuer=CuerConfig(seed=3, **ablations))


def test_summary_has_every_condition_axis_and_delta(tmp_path: Path) -> None:
    summary = cuer_agent.cuer(_cuer_config(), out=tmp_path / "run", execution=OFFLINE)
    assert summary.n == 8  # the whole question, over its own pool
    for name in CONDITIONS:
        cond = summary.conditions[name]
        assert all(getattr(cond, axis).ci is not None for axis in AXES)
        if name != "original":
            assert cond.delta is not None and set(type(cond.delta).model_fields) == set(AXES)
    assert summary.conditions["original"].divergence.mean == 0.0
    assert summary.conditions["zero_retrieval"].grounding.mean == 0.0
    assert set(type(summary.roles.items).model_fields) >= {"constructive", "redundant", "neutral"}
    assert summary.ledger.calls > 0


def test_the_cli_prints_the_studys_table_and_writes_what_the_api_writes(
        study: Path, tmp_path: Path) -> None:
    code, out = run_study(CUER, tmp_path / "run")
    assert code == 0, out
    assert "condition" in out  # the table was printed
    assert (tmp_path / "run" / "summary.json").read_bytes() == (
        study / "summary.json").read_bytes()


def test_records_and_traces_are_stored_with_intervention_records(study: Path) -> None:
    rows = [json.loads(line) for line in (study / "traces.jsonl").open()]
    records = [json.loads(line) for line in (study / "records.jsonl").open()]
    assert len(records) == 8 * len(CONDITIONS)
    assert {r["record"]["condition"] for r in rows} == set(CONDITIONS)
    dup = next(r for r in rows if r["record"]["condition"] == "duplicate")
    copy_id = dup["record"]["new_ids"][0]
    assert re.fullmatch(r"[0-9a-f]{12}-c0", copy_id)  # a real-form id: nothing tells
    target = dup["record"]["target_titles"][0]
    assert any(copy_id == evidence_id(target, p) for p in range(100))  # of its title
    assert "record" not in dup["trace"] and "intervention" not in dup["trace"]


def test_same_command_gives_the_same_summary_bytes(study: Path, tmp_path: Path) -> None:
    assert run_study(CUER, tmp_path / "b")[0] == 0
    assert (study / "summary.json").read_bytes() == \
        (tmp_path / "b" / "summary.json").read_bytes()


def test_interrupted_study_resumes_without_duplicate_rows(studies: Studies, study: Path,
                                                         tmp_path: Path) -> None:
    part = studies.copy(*CUER, to=tmp_path / "part")
    lines = (part / "records.jsonl").read_text().splitlines(keepends=True)
    (part / "records.jsonl").write_text("".join(lines[:-4]))  # died mid-example
    (part / "summary.json").unlink()
    assert run_study(CUER, part)[0] == 0
    assert (part / "records.jsonl").read_bytes() == (study / "records.jsonl").read_bytes()
    assert (part / "summary.json").read_bytes() == (study / "summary.json").read_bytes()


def test_ablations_are_reported_behind_flags(tmp_path: Path) -> None:
    summary = cuer_agent.cuer(
        _cuer_config(two_support=True, duplicate_positions=True, replace_hardness_sweep=True,
                     weight_sensitivity=True),
        out=tmp_path / "run", execution=OFFLINE)
    ablations = json.loads((tmp_path / "run" / "summary.json").read_text())["ablations"]
    assert summary.ablations is not None
    assert set(ablations["duplicate_position"]) == {"end", "front", "after"}
    assert set(ablations["replace_hardness"]) == {"easy", "medium", "hard"}
    assert "synergy_share" in ablations["two_support"] or ablations["two_support"]["n"] == 0
    assert isinstance(ablations["weight_sensitivity"]["any_conclusion_changes"], bool)


def test_empty_retrieval_is_skipped_and_counted(tmp_path: Path) -> None:
    data = [{"_id": "a", "question": "zzqx wvvk?", "answer": "x", "type": "bridge",
             "supporting_facts": [["P", 0]], "context": [["P", ["Alpha beta gamma."]],
                                                          ["Q", ["Delta epsilon."]]]},
            {"_id": "b", "question": "What is alpha?", "answer": "beta", "type": "bridge",
             "supporting_facts": [["P", 0]], "context": [["P", ["Alpha beta gamma."]],
                                                          ["Q", ["Delta epsilon."]]]}]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    summary = cuer_agent.cuer(StudyConfig(data=DataSection(dataset="hotpotqa", path=str(path))),
                              out=tmp_path / "run", execution=OFFLINE)
    assert summary.skipped["remove"] == {"empty retrieval": 1}
    assert summary.conditions["remove"].n == 1


def test_config_file_sets_the_study_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "study.toml"
    config.write_text('[data]\ndataset = "synthetic"\nn = 3\nhops = 2\n\n'
                      '[cuer]\ndivergence_weights = [0.2, 0.6, 0.2]\n')
    result = invoke(["cuer", "--config", str(config), "--n", "4",
                     "--out", str(tmp_path / "run"), "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n"] == 4
    assert summary["config"]["divergence_weights"] == [0.2, 0.6, 0.2]


def test_synthetic_single_shot_asks_the_whole_question_over_its_own_pool(
        study: Path) -> None:
    from cuer_agent.data import load_dataset
    from cuer_agent.studies._common.pools import question_pools

    rows = [json.loads(line) for line in (study / "traces.jsonl").open()]
    originals = [r["trace"] for r in rows if r["record"]["condition"] == "original"]
    data = question_pools(load_dataset("synthetic", n=8, hops=2, seed=3))
    pools = {ex.id: {p.title for p in ex.passages} for ex in data.examples}
    assert [t["example_id"] for t in originals[:2]] == ["syn-3-0", "syn-3-1"]
    for trace in originals:
        assert trace["question"] == trace["hops"][0]["subquery"]
        assert {e["title"] for e in trace["hops"][0]["retrieved"]} <= pools[trace["example_id"]]


def test_each_pool_holds_a_passage_per_hop_fact_and_lexical_confusers() -> None:
    from cuer_agent.data import load_dataset
    from cuer_agent.studies._common.pools import question_pools

    data = question_pools(load_dataset("synthetic", n=8, hops=3, seed=3), size=10)
    assert data.corpus is None
    for ex in data.examples:
        assert len(ex.passages) == 10
        titles = [p.title for p in ex.passages]
        assert all(h.support_title in titles for h in ex.hops)
        confusers = [p for p in ex.passages if p.title not in ex.supporting_titles]
        assert len(confusers) == 10 - len(ex.hops)


def test_gold_sub_questions_are_asked_when_the_config_says_so(tmp_path: Path) -> None:
    config = StudyConfig(data=DataSection(n=3, hops=2), cuer=CuerConfig(questions="per_hop"))
    assert cuer_agent.cuer(config, out=tmp_path / "run", execution=OFFLINE).n == 3 * 2


def test_shipped_study_configs_are_valid() -> None:
    from cuer_agent.config import load_config
    root = Path(__file__).resolve().parents[1] / "configs"
    for path in sorted(root.glob("*.toml")):
        load_config(path)


def cuer_with_bad_config(tmp_path: Path, toml: str) -> Result:
    """`cuer-agent cuer --config bad.toml` with `toml` as that file's text."""
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    return invoke(["cuer", "--config", str(config), "--out", str(tmp_path / "r")])


def test_config_with_an_unknown_key_names_the_key(tmp_path: Path) -> None:
    result = cuer_with_bad_config(tmp_path, "[cuer]\nreplace_hardnes = 'easy'\n")
    assert result.exit_code == 2
    assert "bad.toml: cuer.replace_hardnes: unknown key" in result.stderr


def test_config_with_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    result = cuer_with_bad_config(tmp_path, "[cuer]\nk = 'five'\n")
    assert result.exit_code == 2
    assert "cuer.k" in result.stderr


def test_role_thresholds_in_a_config_are_checked(tmp_path: Path) -> None:
    result = cuer_with_bad_config(tmp_path, "[cuer.roles]\nhurt_f2 = 0.3\n")
    assert result.exit_code == 2
    assert "bad.toml: cuer.roles" in result.stderr and "hurt_f2" in result.stderr


def test_trace_rows_of_an_unrecorded_example_are_dropped_on_resume(
        studies: Studies, study: Path, tmp_path: Path) -> None:
    part = studies.copy(*CUER, to=tmp_path / "part")
    # Killed right after writing the next example's first trace row, before any record.
    records = (part / "records.jsonl").read_text().splitlines(keepends=True)
    last_example = json.loads(records[-1])["record"]["example_id"]
    kept = [r for r in records if json.loads(r)["record"]["example_id"] != last_example]
    (part / "records.jsonl").write_text("".join(kept))
    traces = (part / "traces.jsonl").read_text().splitlines(keepends=True)
    first_of_last = next(i for i, t in enumerate(traces)
                         if json.loads(t)["record"]["example_id"] == last_example)
    (part / "traces.jsonl").write_text("".join(traces[:first_of_last + 1]))
    assert run_study(CUER, part)[0] == 0
    assert (part / "traces.jsonl").read_bytes() == (study / "traces.jsonl").read_bytes()


def test_per_hop_questions_of_one_example_are_bootstrapped_as_one_cluster() -> None:
    from cuer_agent.config import CuerConfig
    from cuer_agent.studies.cuer.summary import _ci

    config = CuerConfig(bootstrap_resamples=2000)
    values = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # two examples, three hops each
    per_hop = _ci(values, config, ["a#h1", "a#h2", "a#h3", "b#h1", "b#h2", "b#h3"])
    independent = _ci(values, config, ["a", "b", "c", "d", "e", "f"])
    assert per_hop == (0.0, 1.0)  # only two clusters: the mean is 0, 0.5 or 1
    assert independent[0] > 0.0 and independent[1] < 1.0

"""Typed summaries: each study's summary.json validates through its model (and its JSON
Schema), a removed or renamed key is rejected with one clear line naming the file and
the key, and the committed schemas in docs/schemas/ are current."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PROPAGATE, QUIET, RUN, Studies, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from cuer_agent.errors import DataError
from cuer_agent.run_dir import RunDir
from cuer_agent.studies._common.summary_model import Part
from cuer_agent.studies.cuer.summary_model import DatasetRoles, TwoSupport
from cuer_agent.studies.schemas import (
    SCHEMA_DIR,
    SCHEMAS,
    CuerSummary,
    EvaluateSummary,
    PropagateSummary,
    RunSummary,
    main,
    read_summary,
    schema_texts,
    validate_summary,
)

EVALUATE_10 = ("evaluate", "--hops", "2", "--n", "10",
               "--diagnosers", "chance,trace-rule,coverage,frozen-hop")
"""An evaluate of 10 examples: the data-set roles verdict needs 10."""
pytestmark = pytest.mark.background(PROPAGATE, EVALUATE_10)  # made in the background lane

# Which model each summary.json of a study run directory validates through.
SUMMARIES = {
    "run": ("run/summary.json", RunSummary),
    "cuer": ("cuer/summary.json", CuerSummary),
    "propagate": ("propagate/summary.json", PropagateSummary),
    "evaluate": ("evaluate/summary.json", EvaluateSummary),
    "evaluate single_shot": ("evaluate/single_shot/summary.json", CuerSummary),
}


def two_support_data(path: Path) -> Path:
    """Bridge questions whose two gold supports are both in view (the two-support
    ablation applies), in HotpotQA's format."""
    rows = []
    for i, (film, person, city) in enumerate([("Starfall", "Ann Lee", "Lisbon"),
                                              ("Moonrise", "Bo Chen", "Oslo"),
                                              ("Sunset", "Cy Dor", "Quito")]):
        rows.append({"_id": f"t-{i}", "type": "bridge", "answer": city,
                     "question": f"In which city was the director of {film} born?",
                     "supporting_facts": [[film, 0], [person, 1]],
                     "context": [[film, [f"{film} is a 1999 film directed by {person}."]],
                                 [person, [f"{person} is a film director.",
                                           f" {person} was born in {city}."]],
                                 [f"Other {i}", ["Other text about nothing."]]]})
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, studies: Studies) -> Path:
    """Small real runs of the four studies under one root: the session's shared `run`,
    `propagate` and 10-example `evaluate` runs (linked, read only), and a cuer run with
    every ablation."""
    root = tmp_path_factory.mktemp("summaries")
    for name, args in (("run", RUN), ("propagate", PROPAGATE), ("evaluate", EVALUATE_10)):
        (root / name).symlink_to(studies.get(*args), target_is_directory=True)
    data = two_support_data(root / "hotpot.json")
    result = invoke(["cuer", "--dataset", "hotpotqa", "--path", str(data), "--two-support",
                     "--duplicate-positions", "--replace-hardness", "--weight-sensitivity",
                     "--out", str(root / "cuer"), *QUIET])
    assert result.exit_code == 0, result.output
    return root


def summary_of(runs: Path, study: str) -> dict[str, Any]:
    return json.loads((runs / SUMMARIES[study][0]).read_text(encoding="utf-8"))


@pytest.mark.parametrize("study", list(SUMMARIES))
def test_each_studys_summary_validates_through_its_model(runs: Path, study: str) -> None:
    relpath, model = SUMMARIES[study]
    summary = read_summary(runs / relpath, model)
    assert isinstance(summary, model)
    assert summary.model_dump(mode="json", by_alias=True,
                              exclude_unset=True) == summary_of(runs, study)


def test_the_optional_parts_of_the_small_runs_are_covered(runs: Path) -> None:
    """The keys a study writes only sometimes do appear in the runs above, so the
    validation covered their models."""
    cuer = CuerSummary.model_validate(summary_of(runs, "cuer"))
    assert cuer.ablations is not None and cuer.ablations.two_support.f1_drop is not None
    assert cuer.ablations.weight_sensitivity is not None
    assert cuer.conditions["remove"].delta is not None
    evaluate = EvaluateSummary.model_validate(summary_of(runs, "evaluate"))
    assert isinstance(evaluate.single_shot.roles.dataset, DatasetRoles)
    assert evaluate.diagnosers["chance"].expected_acc_analytic is not None
    assert all(cell.beats_trace_rule is not None
               for cell in evaluate.diagnosers["coverage"].by_depth.values())
    propagate = PropagateSummary.model_validate(summary_of(runs, "propagate"))
    assert all(cell.forced for cell in propagate.faults["early_termination"].values())


@pytest.mark.parametrize("study", list(SUMMARIES))
def test_each_studys_summary_validates_against_its_json_schema(runs: Path,
                                                               study: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    name = next(n for n, m in SCHEMAS.items() if m is SUMMARIES[study][1])
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(summary_of(runs, study), schema,
                        cls=jsonschema.Draft202012Validator)


def test_the_committed_schemas_are_current() -> None:
    committed = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert committed == set(SCHEMAS)
    for name, text in schema_texts().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text, (
            f"docs/schemas/{name} is stale: run python -m cuer_agent.studies.schemas")


def test_main_writes_every_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(tmp_path)])
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == schema_texts()
    assert len(capsys.readouterr().out.splitlines()) == len(SCHEMAS)


# --- a removed or renamed key ---------------------------------------------------------------

Path_ = tuple[str | int, ...]


def required_keys(model: BaseModel, data: dict[str, Any], at: Path_ = ()) -> Iterator[Path_]:
    """Every key a summary part must have, as the path to it in `data` (the study
    configs, whose keys have defaults, are not summary parts)."""
    for name, field in type(model).model_fields.items():
        key = field.alias or name
        if key not in data:
            continue
        if isinstance(model, Part) and field.is_required():
            yield (*at, key)
        yield from _inside(getattr(model, name), data[key], (*at, key))


def _inside(value: Any, data: Any, at: Path_) -> Iterator[Path_]:
    if isinstance(value, BaseModel):
        yield from required_keys(value, data, at)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _inside(item, data[key], (*at, key))
    elif isinstance(value, list | tuple) and isinstance(data, list):
        for i, item in enumerate(value):
            yield from _inside(item, data[i], (*at, i))


def without(summary: dict[str, Any], at: Path_, rename: bool) -> dict[str, Any]:
    """A copy of `summary` with the key at `at` removed, or renamed to `<key>_renamed`."""
    copy = json.loads(json.dumps(summary))
    parent = copy
    for key in at[:-1]:
        parent = parent[key]
    value = parent.pop(at[-1])
    if rename:
        parent[f"{at[-1]}_renamed"] = value
    return copy


@pytest.fixture(scope="module")
def required(runs: Path) -> list[tuple[str, Path_]]:
    out = []
    for study, (_, model) in SUMMARIES.items():
        summary = summary_of(runs, study)
        out += [(study, at) for at in required_keys(model.model_validate(summary), summary)]
    return out


def test_every_part_has_required_keys(required: list[tuple[str, Path_]]) -> None:
    studies = {study for study, _ in required}
    assert studies == set(SUMMARIES) and len(required) > 2000


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(choice=st.data(), rename=st.booleans())
def test_a_removed_or_renamed_key_is_rejected_naming_it(
        runs: Path, required: list[tuple[str, Path_]], choice: st.DataObject,
        rename: bool) -> None:
    study, at = choice.draw(st.sampled_from(required))
    relpath, model = SUMMARIES[study]
    bad = without(summary_of(runs, study), at, rename)
    with pytest.raises(DataError) as err:
        validate_summary(bad, model, runs / relpath)
    parent = ".".join(map(str, at[:-1])) or "(top level)"
    message = str(err.value)
    assert message.startswith(f"{runs / relpath}: {parent}: missing key ")
    assert f"(schema: {model.__name__})" in message and "\n" not in message
    if at[-1] != "suppressed":  # the one key that picks its part's kind
        assert f"missing key {str(at[-1])!r}" in message
        assert (f"(found '{at[-1]}_renamed' instead)" in message) == rename


@pytest.mark.parametrize(("study", "at", "message"), [
    ("run", ("ledger", "cache_hits"), "ledger: missing key 'cache_hits'"),
    ("run", ("accuracy", "soft"), "accuracy: missing key 'soft'"),
    ("cuer", ("conditions", "remove", "delta", "f1", "p"),
     "conditions.remove.delta.f1: missing key 'p'"),
    ("cuer", ("roles", "items", "confidence-distorting"),
     "roles.items: missing key 'confidence-distorting'"),
    ("cuer", ("ablations", "two_support", "f1_drop", "both"),
     "ablations.two_support.f1_drop: missing key 'both'"),
    ("propagate", ("faults", "early_termination", "1", "recovery"),
     "faults.early_termination.1: missing key 'recovery'"),
    ("propagate", ("tampering_certification", "certified_share"),
     "tampering_certification: missing key 'certified_share'"),
    ("evaluate", ("comparison", "examples", 0, "critical_hop"),
     "comparison.examples.0: missing key 'critical_hop'"),
    ("evaluate", ("diagnosers", "chance", "by_depth", "1", "beats_independence"),
     "diagnosers.chance.by_depth.1: missing key 'beats_independence'"),
    ("evaluate", ("ledger", "diagnoser_requests"), "ledger: missing key 'diagnoser_requests'"),
    ("evaluate", ("provenance", "commit"), "provenance: missing key 'commit'"),
])
def test_a_renamed_key_names_the_old_and_the_new_name(runs: Path, study: str, at: Path_,
                                                      message: str) -> None:
    model = SUMMARIES[study][1]
    expected = f"summary.json: {message} (found '{at[-1]}_renamed' instead)"
    with pytest.raises(DataError, match=f"^{re.escape(expected)}"):
        validate_summary(without(summary_of(runs, study), at, rename=True), model,
                         "summary.json")


def test_a_wrong_value_names_its_key(runs: Path) -> None:
    summary = summary_of(runs, "propagate")
    summary["clean"]["hops_used"]["three"] = 1
    with pytest.raises(DataError, match=r"clean\.hops_used\.three: String should match"):
        validate_summary(summary, PropagateSummary, "summary.json")


def test_a_summary_written_from_its_model_holds_only_the_keys_it_was_given(
        tmp_path: Path) -> None:
    RunDir(tmp_path).write_model(TwoSupport(n=0))
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8")) == {"n": 0}

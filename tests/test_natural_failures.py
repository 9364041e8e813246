"""The natural-failure part of a study: every clean run that ended wrong, labelled from the
gold chain, written as a benchmark (`natural/`), and the diagnosers scored on it — in
`evaluate`, in `run --natural`, and for any agent's traces with `diagnose --gold`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EVALUATE, Studies, cli_text
from test_loaders import musique_record, write_jsonl

import cuer_agent
from cuer_agent.config import AgentSection, DataSection, StudyConfig
from cuer_agent.interventions.repairs import repair_names
from cuer_agent.studies.diagnose.labels import read_labels
from cuer_agent.studies.evaluate.summary_model import EvaluateSummary
from cuer_agent.studies.natural.rule import RULE
from cuer_agent.studies.natural.summary import NaturalSummary

pytestmark = pytest.mark.background(EVALUATE)  # the shared run, made in the background lane
CONTROLS = ("chain-rule", "trace-rule", "chance", "first-hop", "last-hop")


@pytest.fixture(scope="module")
def run(studies: Studies) -> Path:
    """The session's shared `evaluate --hops 3 --n 8` run: read only."""
    return studies.get(*EVALUATE)


@pytest.fixture(scope="module")
def natural(run: Path) -> NaturalSummary:
    text = (run / "summary.json").read_text(encoding="utf-8")
    return EvaluateSummary.model_validate_json(text).natural


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_clean_run_is_labelled_or_counted_with_a_reason(natural: NaturalSummary) -> None:
    counts = natural.counts
    assert counts.rule == RULE
    assert counts.correct + counts.failed + counts.not_scored == counts.clean_runs == 8
    assert counts.labelled + sum(counts.unlabelled.values()) == counts.failed > 0


def test_the_labels_file_validates_and_names_its_rule(run: Path,
                                                      natural: NaturalSummary) -> None:
    labels = read_labels(run / "natural" / "labels.jsonl")
    assert {label.rule for label in labels.values()} == {RULE}
    failed = [label for label in labels.values() if label.outcome == "failed"]
    assert len(failed) == natural.counts.labelled
    assert all(label.fault and label.fault.startswith("natural/") and label.why
               for label in failed)


def test_the_spans_hold_every_clean_run_under_the_labels_ids(run: Path) -> None:
    spans = _lines(run / "natural" / "spans.jsonl")
    ids = {span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]  # type: ignore[index]
           for span in spans}
    assert len(spans) == 8
    assert set(read_labels(run / "natural" / "labels.jsonl")) <= ids


def test_the_controls_are_scored_beside_the_diagnosers_and_the_probes_repair_failures(
        natural: NaturalSummary) -> None:
    assert set(CONTROLS) | {"consistency", "coverage"} <= set(natural.diagnosers)
    assert {"frozen-hop", "suffix-regen"} <= set(natural.diagnosers)
    # the probe that only undoes an injected fault says why it cannot run here
    assert set(natural.not_run) == {"cuer-single-shot"}
    assert "makes none of the agent's repairs" in natural.not_run["cuer-single-shot"]
    for name, summary in natural.diagnosers.items():
        assert summary.n == natural.counts.labelled
        # a probe repairs failures only: a correct run has nothing to repair
        probing = name in (natural.probes or {})
        assert summary.clean_n == (0 if probing else natural.counts.correct)


def test_diagnose_on_the_benchmark_files_reproduces_the_natural_scores(
        run: Path, natural: NaturalSummary, tmp_path: Path) -> None:
    part = run / "natural"
    code, text = cli_text("diagnose", "--traces", part / "spans.jsonl", "--labels",
                          part / "labels.jsonl", "--out", tmp_path, "--no-cache", "--hops", "3")
    assert code == 0, text
    again = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))["diagnosers"]
    for name in ("consistency", "coverage", *CONTROLS):
        assert again[name]["scored"]["exact_hop_acc"] == (
            natural.diagnosers[name].exact_hop_acc.model_dump(mode="json")), name


def test_the_report_and_the_headline_show_natural_failures(run: Path) -> None:
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "## Natural failures" in report
    assert "| natural failures |" in report


def test_run_natural_writes_the_part_for_any_run(tmp_path: Path) -> None:
    code, text = cli_text("run", "--dataset", "synthetic", "--n", "6", "--natural",
                          "--out", tmp_path, "--no-cache", "--no-progress")
    assert code == 0, text
    summary = NaturalSummary.model_validate_json(
        (tmp_path / "natural" / "summary.json").read_text(encoding="utf-8"))
    assert summary.counts.clean_runs == 6 and "natural failures" in text


def test_run_natural_refuses_the_single_shot_mode(tmp_path: Path) -> None:
    code, text = cli_text("run", "--mode", "single-shot", "--natural", "--out", tmp_path)
    assert code == 2 and "--natural" in text


def test_diagnose_with_gold_labels_foreign_traces_from_the_gold_chain(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "musique.jsonl", [musique_record()])
    code, text = cli_text("run", "--dataset", "musique", "--path", data, "--hops", "3",
                          "--out", tmp_path / "run", "--no-cache", "--no-progress")
    assert code == 0, text
    spans = tmp_path / "spans.jsonl"
    assert cli_text("export", tmp_path / "run", "--out", spans)[0] == 0
    code, text = cli_text("diagnose", "--traces", spans, "--gold", data, "--dataset",
                          "musique", "--out", tmp_path / "d", "--no-cache")
    assert code == 0, text
    assert "labels from the gold chain: 1 traces" in text
    [label] = read_labels(tmp_path / "d" / "labels.jsonl").values()
    assert label.rule == RULE


@pytest.mark.parametrize("agent", ["examples/react_agent.py:build",
                                   "examples/two_node_agent.py:build"])
def test_the_natural_part_runs_on_other_agent_shapes(agent: str, tmp_path: Path) -> None:
    config = StudyConfig(data=DataSection(n=12), agent=AgentSection(factory=agent, hops=3))
    cuer_agent.run(config, natural=True, out=tmp_path,
                   execution=cuer_agent.Execution(use_cache=False))
    counts = NaturalSummary.model_validate_json(
        (tmp_path / "natural" / "summary.json").read_text(encoding="utf-8")).counts
    assert counts.correct + counts.failed == 12
    assert counts.failed > 0 and counts.labelled == counts.failed


def test_evaluate_on_a_real_data_set_writes_a_summary_without_the_world_s_disagreement(
        tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "musique.jsonl", [musique_record()])
    config = StudyConfig(data=DataSection(dataset="musique", path=str(data)),
                         agent=AgentSection(hops=3))
    summary = cuer_agent.evaluate(config, out=tmp_path / "run",
                                  execution=cuer_agent.Execution(use_cache=False))
    assert summary.natural.counts.clean_runs == 1
    assert "disagreement" not in json.loads((tmp_path / "run" / "summary.json").read_text())


def test_every_probed_failure_is_fixed_by_a_named_repair_or_counted_as_no_repair(
        run: Path, natural: NaturalSummary) -> None:
    rows = [r for r in _lines(run / "natural" / "diagnoses.jsonl")
            if r["diagnoser"] in ("frozen-hop", "suffix-regen") and not r["error"]]
    assert rows
    for row in rows:
        repair, hop, n = row.get("repair"), row["pred_hop"], row["n_hops"]
        assert isinstance(hop, int) and isinstance(n, int)
        if repair is not None:  # which repair fixed which hop, and what it cost
            assert repair in repair_names() and 1 <= hop <= n
            assert f"{repair} at hop {hop} fixes it" in str(row["cause"])
        elif row["pred_stage"] == "none":  # the abstention, with what was tried
            assert "no single-hop repair fixes this run" in str(row["cause"])
        else:
            assert hop == n + 1  # one more hop fixed it
    outcomes = natural.probes or {}
    for name in ("frozen-hop", "suffix-regen"):
        mine = [r for r in rows if r["diagnoser"] == name]
        counted = outcomes[name]
        assert counted.probed == len(mine)
        assert counted.no_repair_fixes == sum(r["pred_stage"] == "none" for r in mine)
        assert sum(sum(h.values()) for h in counted.fixed_by.values()) == sum(
            "repair" in r for r in mine)


def test_the_summary_counts_the_cascades_from_every_hops_verdict(
        run: Path, natural: NaturalSummary) -> None:
    labels = read_labels(run / "natural" / "labels.jsonl")
    wrong = [sum(not v.right for v in label.hop_verdicts or ())
             for label in labels.values() if label.outcome == "failed"]
    assert natural.counts.cascades == sum(w >= 2 for w in wrong)
    assert natural.counts.cascade_share == pytest.approx(
        natural.counts.cascades / len(wrong), abs=1e-6)


def test_diagnose_with_the_agent_probes_each_failure_as_run_natural_does(
        tmp_path: Path) -> None:
    """`diagnose --agent` on a run's exported spans: the same agent re-executed on the same
    data gives each failure the probe rows `run --natural` gives it."""
    data = write_jsonl(tmp_path / "musique.jsonl", [
        musique_record(), musique_record(id="2hop__wrong", answer="Zanzibar",
                                         answer_aliases=[])])
    code, text = cli_text("run", "--dataset", "musique", "--path", data, "--hops", "3",
                          "--natural", "--out", tmp_path / "run", "--no-cache",
                          "--no-progress")
    assert code == 0, text
    spans = tmp_path / "spans.jsonl"
    assert cli_text("export", tmp_path / "run", "--out", spans)[0] == 0
    code, text = cli_text("diagnose", "--traces", spans, "--gold", data, "--dataset",
                          "musique", "--agent", "cuer_agent.graphs.agent:build", "--hops", "3",
                          "--diagnosers", "frozen-hop,suffix-regen", "--out", tmp_path / "d",
                          "--no-cache")
    assert code == 0, text

    def probes(path: Path) -> list[tuple[object, ...]]:
        return sorted((r["example_id"], r["diagnoser"], r["pred_hop"], r.get("repair"),
                       r["cause"]) for r in _lines(path) if r["diagnoser"] in
                      ("frozen-hop", "suffix-regen"))

    mine = probes(tmp_path / "d" / "diagnoses.jsonl")
    assert mine and mine == probes(tmp_path / "run" / "natural" / "diagnoses.jsonl")
    assert {row[0] for row in mine} == {"2hop__wrong"}  # a correct run has nothing to repair


def test_diagnose_with_the_agent_but_no_data_file_is_one_line_and_exit_2(
        tmp_path: Path) -> None:
    spans = write_jsonl(tmp_path / "spans.jsonl", [{}])
    code, text = cli_text("diagnose", "--traces", spans, "--agent",
                          "cuer_agent.graphs.agent:build", "--out", tmp_path / "d")
    assert code == 2
    assert text.strip() == ("error: --agent re-executes the traces' agent on their examples: "
                            "give the data file they ran on (--gold FILE --dataset NAME)")


def test_a_gold_free_probe_makes_no_gold_repair(run: Path) -> None:
    rows = [r for r in _lines(run / "natural" / "diagnoses.jsonl")
            if str(r["diagnoser"]).endswith("-free") and not r["error"]]
    assert rows
    assert all(r.get("repair") != "gold-support" for r in rows)
    no_fix = [r for r in rows if r["pred_stage"] == "none"]
    assert all("gold-support not applicable: a gold oracle, and this probe is gold-free"
               in str(r["cause"]) for r in no_fix)

"""`cuer-agent evaluate` end to end, the diagnosers' conformance, and bad input."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from conftest import EVALUATE, EVALUATE_KINDS, SMALL_EVALUATE, Studies, invoke, run_study

from cuer_agent.data import load_dataset
from cuer_agent.diagnoser_kit import make_view, validate_diagnoser
from cuer_agent.diagnosers import diagnoser_names, get_diagnoser
from cuer_agent.diagnosers._reexecution import ExecutionProbe
from cuer_agent.execution import AgentConfig, Executor, replace_evidence
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.metrics import recall_correct
from cuer_agent.retrieval import BM25Retriever

CONCURRENT = (*EVALUATE_KINDS, "--concurrency", "3")
RESUMED = SMALL_EVALUATE
"""The run a test kills and resumes: any evaluate with more than one example will do (the
resume recomputes the summary of all of them), so the smallest shared one."""
pytestmark = pytest.mark.background(EVALUATE, EVALUATE_KINDS, CONCURRENT, RESUMED)
SMALL = ("evaluate", "--hops", "3", "--n", "3", "--seed", "7", "--faults", "empty_retrieval")
"""For a test whose point holds on any run with a failed injection (one fault that fails
runs: the other six would only add work)."""


@pytest.fixture(scope="module")
def run(studies: Studies) -> Path:
    """The session's `evaluate --hops 3 --n 8` (every diagnoser): read only."""
    return studies.get(*EVALUATE)


def test_summary_has_every_part(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    assert {"single_shot", "agentic", "diagnosers", "ledger", "config", "caveats", "verify",
            "invisibility", "reader"} <= set(summary)
    reader = summary["reader"]
    assert reader["accuracy"] == summary["agentic"]["clean"]["accuracy"]
    assert reader["without_relation_table"]["accuracy"] is not None
    assert summary["diagnosers"]["frozen-hop"]["uses_environment_oracle"]
    assert {"n", "accuracy"} <= set(summary["agentic"]["clean"])
    cell = summary["agentic"]["faults"]["empty_retrieval"]["1"]
    assert {"injected", "failed", "recovery"} <= set(cell)
    for hop_cell in summary["agentic"]["tampering"].values():
        assert {"resisted", "absorbed", "derailed"} <= set(hop_cell)
    assert set(summary["diagnosers"]) == set(diagnoser_names())
    for d in summary["diagnosers"].values():
        assert {"by_depth", "stage_acc", "hop_tol_acc", "calls_per_diagnosis"} <= set(d)
        for depth in d["by_depth"].values():
            assert {"n", "acc", "ci"} <= set(depth)
    assert "expected_acc_analytic" in summary["diagnosers"]["chance"]


def test_summary_counts_retries_effective_injections_and_persistence(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    agentic = summary["agentic"]
    assert agentic["persistence"] == summary["config"]["propagation"]["fault_persistence"]
    assert summary["config"]["agent"]["retries_per_hop"] == 1
    assert {"hops", "retried_hops"} <= set(agentic["clean"])
    for per_hop in agentic["faults"].values():
        for cell in per_hop.values():
            assert cell["effective"] + cell["ineffective"] == cell["injected"]
            assert 0 <= cell["retried"] <= cell["injected"]
            assert cell["recovered_effective"] <= cell["effective"]


def test_single_shot_baseline_asks_the_whole_question(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    assert summary["single_shot"]["questions"] == "whole"
    assert summary["single_shot"]["n"] == 8
    originals = [json.loads(line)["record"]["example_id"]
                 for line in (run / "single_shot" / "records.jsonl").open()]
    assert "syn-0-0" in originals


def test_comparison_puts_single_shot_targets_beside_the_critical_hop(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    comparison = summary["comparison"]
    right = {r["record"]["example_id"] for r in map(json.loads, (run / "agentic" /
                                                                 "records.jsonl").open())
             if r["record"]["condition"] == "clean" and r["metrics"]["correct"]}
    assert {row["example_id"] for row in comparison["examples"]} <= right
    for row in comparison["examples"]:
        assert {s["hop"] for s in row["single_shot"]} == {None}  # the whole question
        if row["critical_hop"] is None:
            assert row["points_at_critical"] is None
        assert not (row["critical_hop"] and row["tied_hops"])  # a tie is never broken
    assert comparison["points_at_critical"] <= comparison["with_critical_hop"]
    assert comparison["independent_share"] is None or 0 <= comparison["independent_share"] <= 1
    assert "Single-shot vs agentic analysis, per example" in (run / "report.md").read_text()


def test_report_files_are_written_and_rebuilt_identically(studies: Studies,
                                                          tmp_path: Path) -> None:
    run = studies.copy(*EVALUATE, to=tmp_path / "run")
    md, html = (run / "report.md").read_bytes(), (run / "report.html").read_bytes()
    result = invoke(["report", str(run)])
    assert result.exit_code == 0, result.output
    assert (run / "report.md").read_bytes() == md
    assert (run / "report.html").read_bytes() == html


def _drop_rows(path: Path, keep: object) -> None:
    rows = path.read_text().splitlines(keepends=True)
    path.write_text("".join(r for r in rows if keep(json.loads(r))))  # type: ignore[operator]


def test_killed_and_resumed_evaluate_gives_the_same_summary(studies: Studies,
                                                            tmp_path: Path) -> None:
    """Simulate a SIGKILL in the middle of the last example: its trace and diagnosis rows
    are partly written, its record rows and closing row are not. (The finished run is
    copied, then cut back to that state.)"""
    run = studies.get(*RESUMED)
    part = studies.copy(*RESUMED, to=tmp_path / "part")
    agentic = part / "agentic"
    last = json.loads((agentic / "records.jsonl").read_text().splitlines()[-1])
    victim = last["record"]["example_id"]
    _drop_rows(agentic / "records.jsonl", lambda r: r["record"]["example_id"] != victim)
    seen: list[int] = []

    def half_of_victim(r: dict) -> bool:
        if r["example_id"] != victim:
            return True
        seen.append(1)
        return len(seen) % 2 == 1

    _drop_rows(agentic / "diagnoses.jsonl", half_of_victim)
    single = (part / "single_shot" / "records.jsonl").read_text().splitlines(keepends=True)
    (part / "single_shot" / "records.jsonl").write_text("".join(single[:-3]))
    (part / "summary.json").unlink()
    assert run_study(RESUMED, part)[0] == 0
    assert (part / "summary.json").read_bytes() == (run / "summary.json").read_bytes()
    for name in ("records.jsonl", "traces.jsonl", "diagnoses.jsonl"):
        assert (agentic / name).read_bytes() == (run / "agentic" / name).read_bytes()


@pytest.mark.parametrize("args, needle", [
    (["--diagnosers", "oracle9000"], "unknown diagnoser"),
    (["--faults", "gremlins"], "unknown fault"),
])
def test_unknown_names_are_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                               needle: str) -> None:
    code, text = run_study(EVALUATE, tmp_path / "r", *args)
    assert code == 2 and needle in text
    assert not (tmp_path / "r").exists()


def test_config_with_a_wrong_key_names_it(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[diagnose]\nprobe_budjet = 2\n")
    code, text = run_study(EVALUATE, tmp_path / "r", "--config", str(config))
    assert code == 2 and "diagnose.probe_budjet: unknown key" in text


@cache
def failed_fork_cases() -> list:
    """A few injected runs that still fail, with a probe factory for each (made once per
    session: each use makes its own probes from the factories)."""
    dataset = load_dataset("synthetic", n=8, hops=3, seed=7)
    retriever = BM25Retriever.from_passages(dataset.corpus)
    executor = Executor(SkillClient(make_backend("extractive")), AgentConfig(hop_budget=3))
    cases = []
    for example in dataset.examples:
        base = executor.run(example, retriever)
        for hop in (1, 2):
            if len(base.trace.hops) < hop:
                continue
            fork = executor.fork(base, hop, "retrieve", replace_evidence([]))

            def factory(gold: str, fork=fork) -> ExecutionProbe:
                return ExecutionProbe(executor, fork,
                                      lambda answer: bool(recall_correct(answer, (gold,))),
                                      budget=8)

            cases.append((fork.trace, example.answer, factory))
    return cases[:6]


@pytest.mark.parametrize("name", diagnoser_names())
def test_every_builtin_diagnoser_passes_the_conformance_kit(name: str) -> None:
    diagnoser = get_diagnoser(name, skills=SkillClient(make_backend("extractive")))
    report = validate_diagnoser(diagnoser, failed_fork_cases())
    assert report.ok, report.problems


def test_conformance_kit_catches_an_oracle_reading_probe_that_says_it_is_gold_free() -> None:
    from cuer_agent.diagnosers.suffix_regen import SuffixRegen

    class Undeclared(SuffixRegen):
        uses_gold_oracle = False  # but it still decides "fixed" with the gold oracle

    report = validate_diagnoser(Undeclared(), failed_fork_cases())
    assert not report.ok
    assert any("gold oracle" in p for p in report.problems)
    assert validate_diagnoser(SuffixRegen(), failed_fork_cases()).ok  # declared: fine


def test_conformance_kit_catches_a_probe_that_calls_a_clean_tool_undeclared() -> None:
    from cuer_agent.diagnosers.frozen_hop import FrozenHopFree

    class Undeclared(FrozenHopFree):
        uses_environment_oracle = False  # but it re-runs hops with a clean tool

    report = validate_diagnoser(Undeclared(), failed_fork_cases())
    assert not report.ok
    assert any("clean tool" in p for p in report.problems)
    assert validate_diagnoser(FrozenHopFree(), failed_fork_cases()).ok  # declared: fine


def test_the_probes_that_repair_a_hop_declare_the_environment_oracle() -> None:
    declared = {n for n in diagnoser_names() if get_diagnoser(n).uses_environment_oracle}
    assert declared == {"frozen-hop", "frozen-hop-free", "suffix-regen", "suffix-regen-free"}


def test_conformance_kit_catches_a_gold_peeking_diagnoser() -> None:
    from cuer_agent.diagnosers import BaseDiagnoser, Diagnosis

    class Peeker(BaseDiagnoser):
        uses_gold = False  # says it does not, but behaves differently under relabelling
        calls = 0

        def diagnose(self, view, probe=None):  # type: ignore[no-untyped-def]
            Peeker.calls += 1
            return Diagnosis(hop=1 + Peeker.calls % 2, stage="retrieval")

    report = validate_diagnoser(Peeker(), failed_fork_cases()[:1])
    assert not report.ok


def test_a_diagnoser_that_raises_is_recorded_and_the_run_goes_on(tmp_path: Path,
                                                                monkeypatch) -> None:
    from cuer_agent.diagnosers import _base

    class Broken(_base.BaseDiagnoser):
        def diagnose(self, view, probe=None):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    _base.DIAGNOSERS.names()  # built-ins loaded first
    monkeypatch.setitem(_base.DIAGNOSERS._items, "broken", Broken)
    code, text = run_study(SMALL, tmp_path / "r", "--diagnosers", "broken,first-hop")
    assert code == 0, text
    rows = [json.loads(line) for line in (tmp_path / "r" / "agentic" / "diagnoses.jsonl").open()]
    broken = [r for r in rows if r["diagnoser"] == "broken"]
    assert broken and all("boom" in r["error"] for r in broken)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    failed = [r for r in broken if r["fault"] != "none"]  # the rest ran on clean runs
    assert failed  # it was asked about failed runs too, not only clean ones
    assert summary["diagnosers"]["broken"]["errors"] == len(failed)
    assert summary["diagnosers"]["first-hop"]["errors"] == 0


def test_third_party_diagnosers_load_from_the_entry_point_group(monkeypatch) -> None:
    from cuer_agent.diagnosers import _base

    class ThirdParty(_base.BaseDiagnoser):
        def diagnose(self, view, probe=None):  # type: ignore[no-untyped-def]
            return _base.Diagnosis(hop=2, stage="tool")

    class FakeEntryPoint:
        name = "third-party"

        def load(self) -> type:
            return ThirdParty

    def fake_entry_points(group: str) -> list:
        assert group == _base.ENTRY_POINT_GROUP
        return [FakeEntryPoint()]

    from cuer_agent import _registry

    monkeypatch.setattr(_registry, "entry_points", fake_entry_points)
    monkeypatch.setattr(_base, "DIAGNOSERS", _registry.Registry(
        "diagnoser", _base.ENTRY_POINT_GROUP, builtins=_base.DIAGNOSERS.builtins))
    made = get_diagnoser("third-party")
    assert made.name == "third-party"
    assert "third-party" in diagnoser_names()


def test_concurrency_does_not_change_any_result(studies: Studies) -> None:
    """Over a small run with every kind of work (a probing, a skill-calling and a
    trace-only diagnoser), shared with test_executors' reference run."""
    run, c3 = studies.get(*EVALUATE_KINDS), studies.get(*CONCURRENT)
    assert (c3 / "summary.json").read_bytes() == (run / "summary.json").read_bytes()
    for name in ("agentic/records.jsonl", "agentic/diagnoses.jsonl",
                 "single_shot/traces.jsonl"):
        assert (c3 / name).read_bytes() == (run / name).read_bytes()


# --- what every number means (declared readers, base rates, provenance) -------------------

def test_summary_says_what_each_diagnoser_reads_and_its_base_rates(run: Path) -> None:
    diagnosers = json.loads((run / "summary.json").read_text())["diagnosers"]
    assert {"llm-judge-gold", "frozen-hop-free", "suffix-regen-free",
            "cuer-single-shot"} <= set(diagnosers)
    for name, d in diagnosers.items():
        assert {"uses_gold", "uses_gold_oracle", "clean_blame_rate", "blame_hist",
                "by_fault_depth", "independence"} <= set(d), name
        for cell in d["by_depth"].values():
            assert {"independence", "beats_independence", "faults"} <= set(cell)
    assert diagnosers["frozen-hop"]["uses_gold_oracle"] and diagnosers["suffix-regen"][
        "uses_gold_oracle"]
    assert not diagnosers["frozen-hop-free"]["uses_gold_oracle"]
    assert diagnosers["llm-judge-gold"]["uses_gold"] and not diagnosers["llm-judge"]["uses_gold"]
    assert diagnosers["first-hop"]["clean_blame_rate"] == 1.0  # always names hop 1
    # a constant guess of hop 1 is right on every depth-1 trace, and is no better than its
    # own blame histogram blind to the truth
    depth1 = diagnosers["first-hop"]["by_depth"]["1"]
    assert depth1["acc"] == depth1["independence"] == 1.0 and not depth1["beats_independence"]


def test_report_shows_oracle_clean_blame_independence_and_unpooled_cells(run: Path) -> None:
    md = (run / "report.md").read_text()
    assert "trace + probe (gold oracle)" in md and "trace + probe (gold-free)" in md
    assert "clean blame" in md and "independence" in md
    assert "Exact-hop accuracy per fault and depth" in md
    assert "| cuer-single-shot |" in md
    assert "## Provenance" in md and "command: `cuer-agent evaluate" in md


def test_provenance_names_the_command_version_and_machine(run: Path) -> None:
    provenance = json.loads((run / "summary.json").read_text())["provenance"]
    assert set(provenance) == {"command", "version", "commit", "data_sha256", "python",
                               "platform"}
    # the options that decide the results; not where the run was written
    assert provenance["command"] == "cuer-agent evaluate --hops 3 --n 8"
    assert provenance["data_sha256"] is None  # the synthetic world is built in memory


def test_the_data_files_hash_is_recorded() -> None:
    from cuer_agent.provenance import file_sha256

    assert file_sha256(Path(__file__)) == __import__("hashlib").sha256(
        Path(__file__).read_bytes()).hexdigest()
    assert file_sha256(None) is None


def test_a_fork_that_ended_in_an_error_is_counted_apart() -> None:
    from cuer_agent.studies.propagation.summary import fault_table

    def row(correct: float, status: str = "ok") -> dict:
        return {"record": {"condition": "empty_retrieval", "hop": 1}, "status": status,
                "metrics": {"correct": correct, "effective": 1.0, "retried": 0.0}}

    rows = [row(1.0), row(0.0), row(0.0, "error"), row(0.0, "parse_failure")]
    cell = fault_table(rows, ("empty_retrieval",))["empty_retrieval"]["1"]
    assert (cell.injected, cell.recovered, cell.failed, cell.errors) == (2, 1, 1, 2)
    assert cell.ci == (0.094531, 0.905469)  # Wilson, 1/2
    assert cell.descriptive_only  # 2 injections < 10


def test_early_termination_is_reported_as_forced(run: Path) -> None:
    faults = json.loads((run / "summary.json").read_text())["agentic"]["faults"]
    assert all(c.get("forced") for c in faults["early_termination"].values())
    assert not any(c.get("forced") for c in faults["empty_retrieval"].values())


def test_no_single_shot_verdict_when_the_original_answers_almost_nothing() -> None:
    from test_report import condition

    from cuer_agent.studies.cuer.report import pattern_findings
    from cuer_agent.studies.cuer.summary_model import CuerCondition

    floor = {name: CuerCondition.model_validate({**condition(0.0, delta), "n": 100})
             for name, delta in (("original", None), ("remove", 0.0))}
    (finding,) = pattern_findings(floor)
    assert finding.startswith("No correctness verdict") and "0%" in finding


def test_gold_free_probes_name_no_hop_on_a_clean_correct_run() -> None:
    dataset = load_dataset("synthetic", n=8, hops=3, seed=7)
    retriever = BM25Retriever.from_passages(dataset.corpus)
    executor = Executor(SkillClient(make_backend("extractive")), AgentConfig(hop_budget=3))
    example = next(ex for ex in dataset.examples
                   if recall_correct(executor.run(ex, retriever).trace.answer,
                                     ex.gold_answers))
    base = executor.run(example, retriever)

    def diagnose(name: str) -> int:
        probe = ExecutionProbe(executor, base,
                               lambda a: bool(recall_correct(a, (example.answer,))))
        diagnoser = get_diagnoser(name)
        return diagnoser.diagnose(make_view(diagnoser, base.trace, example.answer), probe).hop

    assert diagnose("frozen-hop-free") == diagnose("suffix-regen-free") == 0
    assert diagnose("suffix-regen") == 1  # the oracle finds the run "fixed" by the first repair


def test_cuer_single_shot_removes_each_used_item_and_blames_the_biggest_move() -> None:
    (trace, gold, factory), *_ = failed_fork_cases()
    probe = factory(gold)
    diagnosis = get_diagnoser("cuer-single-shot").diagnose(
        make_view(get_diagnoser("cuer-single-shot"), trace, gold), probe)
    assert probe.probes == min(len(trace.used_ids), probe.budget)  # one re-answer per item
    assert (diagnosis.hop == 0) == (not trace.used_ids)
    assert diagnosis.stage in ("retrieval", "answer")

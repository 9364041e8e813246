"""The evaluate report: report.md and a self-contained report.html from summary.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cuer_agent.config import StudyConfig
from cuer_agent.errors import DataError
from cuer_agent.report import build_report, write_report
from cuer_agent.studies.schemas import EvaluateSummary

SECTIONS = ("Read this before quoting a number", "Single-shot CUE-R study",
            "Evidence-role distribution", "Agentic fault propagation",
            "What the figures rest on",
            "Single-shot vs agentic analysis, per example", "Fault diagnosers",
            "Natural failures: wrong answers no one designed",
            "Ledger and configuration", "Provenance")
CAVEATS = [{"text": f"caveat {i} with weight 0.{i}", "concerns": ["coverage"],
            "impact": i / 10} for i in (6, 5, 4, 3, 2)] + [
    {"text": "judge is a rule-based stand-in for an LLM judge <not an LLM> & scores 0.25 by "
             "design.", "concerns": ["llm-judge"], "impact": 0.0}]


AXES = ("correctness", "em", "f1", "grounding", "confidence_error", "divergence")


def stat(mean: float, half: float = 0.1) -> dict[str, Any]:
    return {"mean": mean, "ci": [mean - half, mean + half]}


def condition(correct: float, delta: float | None) -> dict[str, Any]:
    cond: dict[str, Any] = {"n": 40, "correctness": stat(correct), "em": stat(correct),
                            "f1": stat(correct), "grounding": stat(0.7),
                            "confidence_error": stat(0.4), "divergence": stat(delta or 0.0)}
    if delta is not None:
        cond["delta"] = {axis: {**stat(delta), "p": 0.0004} for axis in AXES}
    return cond


ABSTENTION = {"coverage": 0.5, "named": 15, "precision": 0.6, "precision_ci": [0.4, 0.8],
              "random_precision": 0.33}


def diagnoser(acc: float, *, gold: bool = False, stand_in: str | None = None
              ) -> dict[str, Any]:
    by_depth = {str(h): {"n": n, "acc": acc, "ci": [acc - 0.1, acc + 0.1],
                         "ci_clustered": [acc - 0.2, acc + 0.2], "descriptive_only": n < 10,
                         "faults": {"empty_retrieval": n}, "independence": 0.3,
                         "beats_independence": acc > 0.3, "abstention": ABSTENTION,
                         "beats_trace_rule": acc - 0.1 > 0.4}
                for h, n in ((1, 30), (2, 20), (3, 6))}
    return {"uses_gold": gold, "uses_gold_oracle": False, "uses_environment_oracle": False,
            "probing": False, "abstention": ABSTENTION,
            "stand_in": stand_in, "n": 56, "errors": 0, "error_rate": 0.0,
            "by_depth": by_depth, "exact_hop_acc": {**stat(acc), "ci_clustered": [0.1, 0.9]},
            "balanced": stat(acc), "kappa": stat(acc / 2), "balanced_depths": ["1", "2"],
            "constant": False,
            "stage_acc": stat(0.6), "hop_tol_acc": stat(0.8), "ancestor_hit": stat(0.5),
            "mae": stat(0.9), "calls_per_diagnosis": 1.0, "tokens_per_diagnosis": 120.0,
            "cost_per_correct": {"calls": 2.5, "tokens": 300.0},
            "by_fault": {"empty_retrieval": {"n": 56, "acc": acc}},
            "by_fault_depth": {"empty_retrieval": {"1": {"acc": acc, "n": 30, "ci": [0.1, 0.9],
                                                         "descriptive_only": False}}},
            "blame_hist": {"1": 0.5, "2": 0.3, "3": 0.2}, "independence": 0.3,
            "clean_n": 10, "clean_blame_rate": 0.1}


def role_stat(mean: float) -> dict[str, Any]:
    return {"n": 40, "mean": mean, "ci_low": mean - 0.1, "ci_high": mean + 0.1}


def ledger(requests: int, calls: int) -> dict[str, Any]:
    return {"requests": requests, "calls": calls, "cache_hits": requests - calls,
            "parse_failures": 0, "parse_failure_rate": 0.0, "errors": 0, "retries": 0,
            "prompt_tokens": 0, "completion_tokens": 0, "tokens": 0,
            "by_skill": {"read": {"requests": requests, "parse_failures": 0,
                                  "parse_failure_rate": 0.0, "cut": 0, "repaired": 0,
                                  "completion_tokens": 0, "mean_completion_tokens": 0.0}}}


def summary() -> dict[str, Any]:
    """A small evaluate summary with every part filled in."""
    single_shot = {
        "n": 40,
        "conditions": {"original": condition(0.6, None), "remove": condition(0.3, 0.3),
                       "replace": condition(0.25, 0.35), "duplicate": condition(0.6, 0.0)},
        "skipped": {"replace": {"no non-supporting item for REPLACE": 1}},
        "roles": {"n_items": 40,
                  "items": {"corrective": 10, "constructive": 2, "distractive": 0,
                            "confidence-distorting": 0, "redundant": 8, "neutral": 20},
                  "items_holding": {"corrective": 10, "constructive": 12, "distractive": 0,
                                    "confidence-distorting": 0, "redundant": 8, "neutral": 20},
                  "support_check": {"changed": 10, "supported": 10},
                  "dataset": {"primary": "constructive", "labels": ["constructive"],
                              "verdicts": {label: {"holds": label == "constructive",
                                                   "reason": "CI > 0" if label == "constructive"
                                                   else "no", "evidence": {}}
                                           for label in ("corrective", "constructive",
                                                         "distractive", "confidence-distorting",
                                                         "redundant")},
                              "conditions": {"remove": {m: role_stat(0.3) for m in (
                                  "correctness", "f1", "conf_utility", "divergence")}},
                              "settings": {"ci_level": 0.95, "n_resamples": 5000, "seed": 42,
                                           "redundant_divergence": 0.1,
                                           "confidence_conditions": ["remove"]}}},
        "findings": ["REMOVE hurts correctness (Δ +0.300) — as in the paper."],
        "ledger": ledger(200, 160), "config": {"k": 5}, "questions": "whole",
    }
    cell = {"injected": 30, "recovered": 12, "failed": 18, "recovery": 0.4, "ci": [0.2, 0.6],
            "descriptive_only": False, "retried": 0, "effective": 30, "ineffective": 0,
            "recovered_effective": 12, "recovery_effective": 0.4,
            "recovery_effective_ci": [0.2, 0.6],
            "control": {"n": 30, "recovered": 3, "recovery": 0.1, "ci": [0.03, 0.26],
                        "same_run": 2},
            "verify_detected": 25, "first_hit": {"at_h": 28, "later": 1, "never": 1},
            "by_redundancy": {"1": {"n": 10, "recovered": 1, "ci": [0.0, 0.4]},
                              "3": {"n": 20, "recovered": 11, "ci": [0.3, 0.7]}},
            "errors": 0}
    agentic = {
        "persistence": "corpus",
        "clean": {"n": 50, "accuracy": 0.8, "accuracy_ci": [0.7, 0.9],
                  "hops_used": {"2": 5, "3": 45}, "hops": 145, "retried_hops": 0},
        "faults": {"empty_retrieval": {"1": cell, "2": cell},
                   "content_tampering": {"1": cell, "2": {**cell, "descriptive_only": True}}},
        "tampering": {"1": {"injected": 30, "resisted": 20, "absorbed": 4, "derailed": 6,
                            "contaminated": 3, "strategies": {"answer_fact": 30}}},
        "tampering_certification": {"eligible": 32, "certified": 30, "certified_share": 0.9375,
                                    "not_certified": {"nothing certifiable": 2}},
        "hop_operators": {}, "skipped": {"query_drift": {"clean answer wrong (strict)": 10}},
        "prefix_calls": {"forks": 90, "total": 0, "max": 0}, "stage_transitions": {},
    }
    chance = diagnoser(0.33)
    chance["expected_acc_analytic"] = {"1": 0.33, "2": 0.33, "3": 0.33, "overall": 0.33}
    comparison = {"n": 1, "with_critical_hop": 1, "ties": 0, "points_at_critical": 1,
                  "points_at_critical_share": 1.0, "points_at_critical_ci": [0.2, 1.0],
                  "independent_share": 0.4,
                  "single_shot_flags": 1, "flags_recovered": 0, "flags_recovered_share": 0.0,
                  "critical_hops": {"1": 1},
                  "examples": [{"example_id": "syn-0-0",
                                "single_shot": [{"hop": None, "target": "Alpha", "delta": 1.0}],
                                "critical_hop": 1, "tied_hops": [], "critical_item": "Alpha",
                                "critical_delta": 1.0, "points_at_critical": True}]}
    share = {"n": 30, "hits": 9, "rate": 0.3, "ci": [0.16, 0.48]}
    verify = {"false_alarm": {"n": 150, "hits": 3, "rate": 0.02, "ci": [0.007, 0.057]},
              "detection": {"empty_retrieval": share, "content_tampering": share}}
    scores = {"items": 300, "injected": 60, "auc": 0.55, "ci": [0.48, 0.62],
              "auc_independent": 0.53, "auc_words": 0.5,
              "feature_auc": {"sentences": 0.52, "score": 0.58}, "detectable": False,
              "top_feature": "score", "in_view": {"items": 300, "auc": 0.9, "auc_content": 0.6},
              "by_rank": False}
    invisibility = {"threshold": 0.65, "positional": ["score", "rank", "score_ratio"],
                    "faults": {"content_tampering": scores,
                               "replace (per hop)": {**scores, "auc": 0.7, "detectable": True}}}
    natural = {"dataset": "synthetic",
               "counts": {"rule": "gold-chain-walk@2", "clean_runs": 50, "not_scored": 0,
                          "correct": 40, "failed": 10, "labelled": 9, "labelled_share": 0.9,
                          "unlabelled": {"no per-step gold answers": 1},
                          "by_kind": {"read": 6, "retrieval": 3}, "by_hop": {"1": 5, "2": 4},
                          "chance_expected": 0.33},
               "diagnosers": {"coverage": diagnoser(0.3),
                              "trace-rule": {**diagnoser(0.2), "control": True}},
               "not_run": {"frozen-hop": "re-executes the agent"}}
    reader = {"backend": "extractive", "model": "rules-v1", "version": "abc", "n": 50,
              "accuracy": 0.8, "ci": [0.67, 0.89],
              "without_relation_table": {"accuracy": 0.7, "ci": [0.56, 0.81]},
              "relation_groups": 17, "relation_words": 61}
    return {
        "config": StudyConfig(data={"dataset": "synthetic", "hops": 3}).model_dump(mode="json"),
        "single_shot": single_shot, "agentic": agentic, "verify": verify,
        "invisibility": invisibility, "reader": reader, "comparison": comparison,
        "natural": natural,
        "diagnosers": {"coverage-gold": diagnoser(0.9, gold=True), "coverage": diagnoser(0.5),
                       "llm-judge": diagnoser(0.25,
                                              stand_in="rule-based stand-in for an LLM judge"),
                       "llm-judge-gold": diagnoser(0.25, gold=True,
                                                   stand_in="rule-based stand-in for an LLM "
                                                            "judge"),
                       "chance": {**chance, "control": True},
                       "trace-rule": {**diagnoser(0.45), "control": True},
                       "frozen-hop": {**diagnoser(0.95), "uses_environment_oracle": True,
                                      "probing": True, "calls_per_diagnosis": 0.0}},
        "caveats": CAVEATS,
        "ledger": {**ledger(900, 700), "diagnoser_requests": 50, "diagnoser_errors": 0,
                   "diagnoser_by_skill": {}},
        "provenance": {"command": "cuer-agent evaluate --hops 3", "version": "0.1.0",
                       "commit": None, "data_sha256": None, "python": "3.11.7",
                       "platform": "Linux"},
    }


def run_dir(root: Path, content: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "summary.json").write_text(json.dumps(content), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def full_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory with the report of the full synthetic summary, built once."""
    directory = run_dir(tmp_path_factory.mktemp("full"), summary())
    assert write_report(directory) == (directory / "report.md", directory / "report.html")
    return directory


@pytest.fixture(scope="module")
def full(full_dir: Path) -> tuple[str, str]:
    """(report.md, report.html) of the full synthetic summary."""
    return ((full_dir / "report.md").read_text(encoding="utf-8"),
            (full_dir / "report.html").read_text(encoding="utf-8"))


def test_both_reports_and_the_figures_are_written(full_dir: Path) -> None:
    assert (full_dir / "report.md").stat().st_size > 0
    assert (full_dir / "report.html").stat().st_size > 0
    assert sorted(p.name for p in (full_dir / "report_figures").glob("*.png")) == [
        "cost.png", "cuer_deltas.png", "exact_hop.png", "recovery.png", "roles.png"]


def test_rebuilding_from_the_same_summary_gives_the_same_bytes(full_dir: Path) -> None:
    def files() -> dict[str, bytes]:
        paths = [full_dir / "report.md", full_dir / "report.html",
                 *sorted((full_dir / "report_figures").glob("*.png"))]
        return {p.name: p.read_bytes() for p in paths}

    first = files()
    write_report(full_dir)
    assert files() == first and len(first) == 7


def test_html_is_self_contained(full: tuple[str, str]) -> None:
    page = full[1]
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<script" not in page and "<link" not in page
    images = re.findall(r'<img [^>]*src="([^"]*)"', page)
    assert len(images) == 5 and all(src.startswith("data:image/png;base64,") for src in images)


def test_every_section_is_present_in_both_reports(full: tuple[str, str]) -> None:
    md, page = full
    for title in SECTIONS:
        assert f"\n## {title}\n" in md
        assert f"<h2>{title}</h2>" in page


def test_the_report_opens_with_the_headline_table_and_the_exact_hop_plot(
        full: tuple[str, str]) -> None:
    md = full[0]
    first = md.split("\n## ", 1)[0]  # everything before the first section
    assert "*Headline: recovery after a fault at hop h" in first
    assert ("| fault | h | effective n | recovery | retries off | failed n | best gold-free: "
            "coverage | trace-rule | chance | oracle probe: frozen-hop |") in first
    assert ("| empty_retrieval | 1 | 30 | 0.40 [0.20, 0.60] | 0.10 | 30 | 0.50 [0.10, 0.90] "
            in first)
    assert "report_figures/exact_hop.png" in first


def test_the_first_screen_says_the_result_in_one_sentence_before_the_table(
        full: tuple[str, str]) -> None:
    first = full[0].split("\n## ", 1)[0]
    sentence = next(line for line in first.splitlines() if line.startswith("**In short: "))
    assert first.index(sentence) < first.index("*Headline: recovery after a fault")
    # each figure beside its control: recovery with retries off, the diagnoser beside the
    # best control
    assert "with its retries off" in sentence
    assert "the best gold-free diagnoser, coverage, has a balanced accuracy" in sentence
    assert sentence.endswith("the best control, chance, 0.33.**")


def test_the_five_weightiest_caveats_come_ranked_and_the_rest_fold(
        full: tuple[str, str]) -> None:
    md, page = full
    section = md.split("## Read this before quoting a number\n", 1)[1].split("\n## ", 1)[0]
    shown = [line[2:] for line in section.splitlines() if line.startswith("- ")]
    assert shown[:5] == [f"caveat {i} with weight 0.{i} (weight 0.{i}0)" for i in (6, 5, 4, 3, 2)]
    folded = section.split("<details><summary>1 more caveats, of less weight</summary>", 1)[1]
    assert "- judge is a rule-based stand-in" in folded and "(weight" not in folded
    assert "<details><summary>1 more caveats, of less weight</summary>" in page


def test_a_no_call_diagnoser_costs_a_dash_with_the_reason(full: tuple[str, str]) -> None:
    row = next(line for line in full[0].splitlines()
               if line.startswith("| frozen-hop | ") and "clean tool" in line)
    assert row.endswith("| — (no model calls) | — (no model calls) | — (no model calls) "
                        "| — (no model calls) |")


def test_item_roles_show_every_label_that_holds_and_what_the_support_check_saw(
        full: tuple[str, str]) -> None:
    md = full[0]
    assert "| constructive | 2 (0.05) | 12 (0.30) |" in md
    assert "of the 10 items whose REMOVE hurt and changed the answer, 10 were" in md
    assert "Read corrective here as constructive." in md


def test_skipped_injections_are_counted_as_injections(full: tuple[str, str]) -> None:
    assert "- query_drift: clean answer wrong (strict) — 10 injections" in full[0]


def test_the_full_summary_is_a_valid_evaluate_summary() -> None:
    EvaluateSummary.model_validate(summary())


def test_parts_that_hold_nothing_say_not_run_in_every_section() -> None:
    content = summary()
    content["single_shot"]["conditions"] = {}
    content["comparison"].update(n=0, with_critical_hop=0, points_at_critical=0,
                                 critical_hops={}, examples=[])
    content.update(diagnosers={}, provenance={})
    content["natural"]["diagnosers"] = {}
    md, _, figures = build_report(EvaluateSummary.model_validate(content))
    assert all(f"## {title}" in md for title in SECTIONS)
    for title in ("Single-shot CUE-R study", "Single-shot vs agentic analysis, per example",
                  "Fault diagnosers", "Natural failures: wrong answers no one designed",
                  "Provenance"):
        section = md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        assert "Not run" in section
    assert md.count("Not run") == 5
    assert sorted(figures) == ["recovery.png", "roles.png"]


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda s: s.pop("agentic"), "(top level): missing key 'agentic'"),
    (lambda s: s["agentic"]["clean"].update(acc=s["agentic"]["clean"].pop("accuracy")),
     "agentic.clean: missing key 'accuracy' (found 'acc' instead)"),
    (lambda s: s["diagnosers"]["coverage"]["by_depth"]["2"].update(acc="high"),
     "diagnosers.coverage.by_depth.2.acc: Input should be a valid number"),
])
def test_a_malformed_summary_is_one_data_error_naming_file_and_key(
        tmp_path: Path, mutate: Any, where: str) -> None:
    content = summary()
    mutate(content)
    directory = run_dir(tmp_path, content)
    with pytest.raises(DataError) as err:
        write_report(directory)
    message = str(err.value)
    assert message.startswith(f"{directory / 'summary.json'}: {where}")
    assert "EvaluateSummary" in message and "\n" not in message
    assert not (directory / "report.md").exists()


def test_the_papers_reference_values_appear_labelled(full: tuple[str, str]) -> None:
    md = full[0]
    assert "| original | 40 | 0.600 | 0.585 | 0.700 | 0.823 | 0.400 | 0.422 |" in md
    assert "| remove | 40 | 0.300 | 0.285 | 0.700 | 0.392 | 0.400 | 0.639 |" in md
    coverage = "coverage (reads gold; ours: coverage-gold)"
    judge = "LLM judge (saw the gold answer; ours: llm-judge-gold)"
    frozen = "frozen-hop (gold oracle; ours: frozen-hop)"
    suffix = "suffix-regen (gold oracle; ours: suffix-regen)"
    for row in (f"| {coverage} | all faults | 43/36/21 | 0.91 | 0.00 | 0.00 |",
                f"| {judge} | all faults | 43/36/21 | 0.26 | 0.25 | 0.43 |",
                f"| {frozen} | all faults | 43/36/21 | 0.51 | 0.25 | 0.48 |",
                f"| {coverage} | content corruption, pooled | 44/18/3 | 1.00 | 0.00 | 0.00 |",
                f"| {judge} | content corruption, pooled | 44/18/3 | 0.59 | 0.89 | 0.33 |",
                f"| {frozen} | content corruption, pooled | 44/18/3 | 0.89 | 0.67 | 0.00 |",
                f"| {suffix} | content corruption, pooled | 44/18/3 | 0.91 | 0.11 | 0.00 |"):
        assert row in md
    assert "Paper reference, NOT our setup" in md and "Qwen-3 8B" in md


def test_our_diagnoser_rows_sit_next_to_the_papers(full: tuple[str, str]) -> None:
    md = full[0]
    cover = "0.50 / 0.60 (0.33)"
    assert ("| coverage-gold | 1 | 30 | 0.90 | [0.80, 1.00] | 0.30 | yes | 0.45 "
            f"| yes | {cover} | no | — | 0.91 | 1.00 |") in md
    # the paper's judge saw the gold answer: its row sits next to llm-judge-gold only
    assert ("| llm-judge-gold | 3 | 6 | 0.25 | [0.15, 0.35] | 0.30 | NO | 0.45 "
            f"| NO | {cover} | yes | — | 0.43 | 0.33 |") in md
    assert ("| llm-judge | 3 | 6 | 0.25 | [0.15, 0.35] | 0.30 | NO | 0.45 | NO "
            f"| {cover} | yes | — | — | — |") in md
    # our gold-free coverage is not the paper's (gold-reading) coverage: no paper values
    assert ("| coverage | 1 | 30 | 0.50 | [0.40, 0.60] | 0.30 | yes | 0.45 | NO "
            f"| {cover} | no | — | — | — |") in md
    assert ("| chance | 3 | 6 | 0.33 | [0.23, 0.43] | 0.30 | yes | 0.45 | NO "
            f"| {cover} | yes | 0.33 | — | — |") in md


def test_the_extractive_backend_is_flagged_as_a_stand_in(full: tuple[str, str]) -> None:
    assert "rule-based extractive stand-in, not a language model" in full[0]
    content = summary()
    content["config"]["backend"].update(name="ollama", model="qwen3:8b")
    md = build_report(EvaluateSummary.model_validate(content))[0]
    assert "extractive stand-in" not in md and "ollama, model qwen3:8b" in md


def test_the_ledger_section_has_a_row_per_skill(full: tuple[str, str]) -> None:
    section = full[0].split("## Ledger and configuration", 1)[1]
    assert "Per skill (studies' traces" in section
    assert "| read | 900 | 0 | 0.0000 | 0 | 0 | 0.0 |" in section


def test_the_ledger_counters_hold_no_per_skill_breakdown(full: tuple[str, str]) -> None:
    section = full[0].split("## Ledger and configuration", 1)[1].split("```", 1)[0]
    assert "| diagnoser_by_skill |" not in section and "| by_skill |" not in section


def test_html_escapes_summary_text(full: tuple[str, str]) -> None:
    assert "&lt;not an LLM&gt; &amp; scores" in full[1] and "<not an LLM>" not in full[1]


def test_a_directory_without_a_summary_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"summary\.json"):
        write_report(tmp_path)


def test_the_html_first_screen_holds_the_headline_table_beside_the_plot(
        full: tuple[str, str]) -> None:
    page = full[1]
    first = page.split("<h2>", 1)[0]
    row = first.split('<div class="row">', 1)[1]
    assert "<caption>Headline: recovery after a fault at hop h" in row
    assert '<img alt="Exact-hop accuracy by fault depth, one panel per family' in row


def test_a_summary_built_in_code_without_provenance_validates() -> None:
    # What a study run outside the CLI (a benchmark, a notebook) hands over: the model
    # instance, not its JSON `{}`.
    from cuer_agent.studies.evaluate.summary_model import NoProvenance

    made = EvaluateSummary.model_validate({**summary(), "provenance": NoProvenance()})
    assert isinstance(made.provenance, NoProvenance)

"""Single-shot CUE-R next to the agentic per-hop analysis (`studies.evaluate.comparison`)."""

from __future__ import annotations

from typing import Any

from cuer_agent.studies.evaluate.comparison import compare_analyses


def single(example: str, condition: str, correctness: float, target: str = "") -> dict:
    return {"record": {"example_id": example, "condition": condition,
                       "target_titles": [target] if target else []},
            "metrics": {"correctness": correctness}}


def agentic(example: str, condition: str, correct: float, hop: int = 0,
            target: str = "") -> dict[str, Any]:
    return {"record": {"example_id": example, "condition": condition, "hop": hop,
                       "target_titles": [target] if target else []},
            "metrics": {"correct": correct}}


SINGLE = [single("q#h1", "original", 1.0), single("q#h1", "remove", 0.0, "A"),
          single("q#h2", "original", 1.0), single("q#h2", "remove", 0.0, "B"),
          single("r#h1", "original", 1.0), single("r#h1", "remove", 1.0, "C")]
AGENTIC = [agentic("q", "clean", 1.0), agentic("q", "hop_remove", 1.0, 1, "A"),
           agentic("q", "hop_remove", 0.0, 2, "B"),
           agentic("r", "clean", 1.0), agentic("r", "hop_remove", 1.0, 1, "C")]


def test_the_critical_hop_is_the_one_whose_removal_hurts_the_final_answer() -> None:
    rows = {r.example_id: r for r in compare_analyses(SINGLE, AGENTIC).examples}
    assert (rows["q"].critical_hop, rows["q"].critical_item) == (2, "B")
    assert rows["r"].critical_hop is None and rows["r"].points_at_critical is None


def test_single_shot_points_at_the_critical_item_when_it_flags_it() -> None:
    out = compare_analyses(SINGLE, AGENTIC)
    assert (out.with_critical_hop, out.points_at_critical) == (1, 1)
    assert out.points_at_critical_share == 1.0
    assert out.points_at_critical_ci is not None and out.points_at_critical_ci[0] < 1.0


def test_flags_on_items_the_agent_recovered_from_are_counted() -> None:
    out = compare_analyses(SINGLE, AGENTIC)
    assert (out.single_shot_flags, out.flags_recovered) == (2, 1)  # A: agent recovered


def test_whole_question_ids_compare_by_title() -> None:
    whole = [single("q", "original", 1.0), single("q", "remove", 0.0, "B")]
    out = compare_analyses(whole, AGENTIC)
    assert out.examples[0].single_shot[0].hop is None
    assert out.points_at_critical == 1

"""The source papers' reported numbers (`/work/shared/docs/paper-notes.md`), shown next
to ours. They come from the papers' setups — models, data and retrievers we do not run —
so they are a pattern to compare with, never a target our numbers should hit."""

from __future__ import annotations

# §A, HotpotQA distractor, Qwen-3 8B via Ollama, n=200:
# (correctness, grounding, confidence error, D); None where the paper gives no number.
CUER_SETUP = "CUE-R paper: HotpotQA distractor, Qwen-3 8B via Ollama, n=200"
CUER_HOTPOTQA_QWEN3_8B: dict[str, tuple[float | None, ...]] = {
    "original": (0.585, 0.823, 0.422, 0.0),
    "remove": (0.285, 0.392, 0.639, None),
    "replace": (0.270, 0.353, 0.667, None),
    "duplicate": (0.585, 0.845, 0.424, 0.074),
}
CUER_SIGNIFICANCE = ("REMOVE and REPLACE deltas p < 0.001; DUPLICATE: Δcorrectness 0 (p = 1), "
                     "Δgrounding −0.023 (p = 0.039), D significant (p < 0.001).")

# §B, strict dense, Claude Haiku 4.5, 80 three-hop MuSiQue questions.
DIAG_SETUP = ("fault-attribution paper: strict dense retrieval, Claude Haiku 4.5, 80 "
              "three-hop MuSiQue questions")
# Exact-hop accuracy by depth 1/2/3. "all": every fault (failed n = 43/36/21);
# "content": content corruption pooled (n = 44/18/3).
DIAG_FAILED_N = {"all": (43, 36, 21), "content": (44, 18, 3)}
DIAG_EXACT_HOP: dict[str, dict[str, tuple[float, float, float]]] = {
    "all": {"coverage": (0.91, 0.00, 0.00), "judge": (0.26, 0.25, 0.43),
            "frozen_hop": (0.51, 0.25, 0.48)},
    "content": {"coverage": (1.00, 0.00, 0.00), "judge": (0.59, 0.89, 0.33),
                "frozen_hop": (0.89, 0.67, 0.00), "suffix_regen": (0.91, 0.11, 0.00)},
}
DIAG_LABELS = {"coverage": "coverage (reads gold; ours: coverage-gold)",
               "judge": "LLM judge (saw the gold answer; ours: llm-judge-gold)",
               "frozen_hop": "frozen-hop (gold oracle; ours: frozen-hop)",
               "suffix_regen": "suffix-regen (gold oracle; ours: suffix-regen)"}
# Our diagnoser names that implement the paper's rows, like for like. The paper's coverage
# and judge read the gold answer and its probes decide "fixed" with it: those are our
# `coverage-gold`, `llm-judge-gold`, `frozen-hop` and `suffix-regen`. Our gold-free
# `coverage`, `llm-judge`, `*-free` probes and `cuer-single-shot` have no paper row.
DIAG_ALIASES = {"coverage_gold": "coverage", "llm_judge_gold": "judge",
                "frozen_hop": "frozen_hop", "suffix_regen": "suffix_regen"}

# Tampering outcomes by depth: (resisted, absorbed, derailed, n).
TAMPERING_BY_DEPTH: dict[str, tuple[float, float, float, int]] = {
    "1": (0.58, 0.15, 0.26, 106), "2": (0.74, 0.09, 0.18, 68), "3": (0.85, 0.00, 0.15, 20)}
RECOVERY_RANGES = "recovery 0.54–0.85 for content faults, 0.17–0.71 for structural faults"


def paper_diagnoser(name: str) -> str | None:
    """The paper's row key for one of our diagnoser names, or None if it has none."""
    key = name.lower().replace("-", "_").replace(" ", "_")
    return DIAG_ALIASES.get(key)

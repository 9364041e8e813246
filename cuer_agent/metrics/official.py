"""Answer scoring that reproduces the official evaluators of HotpotQA, 2Wiki and MuSiQue.

`score_predictions(dataset, gold_path, pred_path)` returns
``{"em", "f1", "soft", "n", "missing"}``: the mean EM, F1 and soft correctness over the
gold examples (rounded to 6 decimals), the number of gold examples scored, and how many of
them had no prediction. A missing prediction scores 0 on every metric, as in the official
HotpotQA script (which sums over the gold file and divides by its length).

Gold files are read with `cuer_agent.data.load_dataset`. Prediction files, for every
dataset, may use HotpotQA's official format — one JSON object
``{"answer": {id: answer_string, ...}, ...}`` whose other keys (``"sp"``, ``"evidence"``)
are ignored — and, for MuSiQue, also MuSiQue's official JSON Lines, one
``{"id": ..., "predicted_answer": ...}`` object per line (other keys ignored). The format
is detected from the content.

What the official scripts do (read from their sources)
------------------------------------------------------

* **HotpotQA** ``hotpot_evaluate_v1.py`` (hotpotqa/hotpot): ``normalize_answer`` is
  lower → remove punctuation (``string.punctuation``) → remove the articles a/an/the →
  collapse whitespace. ``exact_match_score`` compares normalised strings. ``f1_score``
  returns 0 when either normalised side is in {yes, no, noanswer} and the two differ, 0
  when no token is shared (so two answers that both normalise to "" get F1 0 but EM 1),
  else the token F1. One gold answer per question (``answer``). Each metric is summed over
  the gold file and divided by ``len(gold)``: ids without an answer add 0 (and break the
  "joint" metrics); ids only in the predictions are ignored. The script also *requires*
  a ``"sp"`` key (KeyError otherwise); we ignore it, since we score answers only.
  Our `cuer_agent.metrics.answer` `normalize_answer`, `exact_match` and `f1_score` are
  exactly this logic and are reused.
* **2WikiMultihopQA** ``2wikimultihop_evaluate.py`` (Alab-NII/2wikimultihop) copies the
  HotpotQA answer functions verbatim (same normalisation, EM, yes/no/noanswer F1 rule) and
  scores against the single ``answer`` field. Its ``2wikimultihop_evaluate_v1.1.py``
  additionally takes the max over Wikidata aliases and demonyms of ``answer_id`` from a
  separate ``id_aliases.json`` (not part of the dataset files) and reports ×100 rounded to
  2 decimals; we follow the alias-free script (single gold, plain means). Both also
  require ``"sp"`` and ``"evidence"`` keys, which we ignore.
* **MuSiQue** ``evaluate_v1.0.py`` + ``metrics/answer.py`` (StonyBrookNLP/musique), the
  SQuAD/AllenNLP functions: the same normalisation steps (its article regex carries
  ``re.UNICODE``, the default for ``str`` patterns, so it is identical); ``compute_exact``
  is normalised equality; ``compute_f1`` has **no** yes/no/noanswer rule, and when either
  side has no tokens (empty, or e.g. "the" or "...") it returns ``int(gold_toks ==
  pred_toks)`` — so two empty answers get F1 1, one empty side F1 0. EM and F1 are each
  the max over ``[answer] + answer_aliases`` (``metric_max_over_ground_truths``; it calls
  ``compute_f1(prediction, gold)`` against the parameter names ``(a_gold, a_pred)``,
  which swaps precision and recall but not F1). Only gold records with
  ``answerable`` true are scored (all of MuSiQue-Ans); we do the same, so ``n`` counts the
  answerable gold records. The script also requires the prediction file to hold exactly
  one line per gold record, in gold order (assertions), and rounds to 3 decimals; we
  match predictions by id instead, score missing ones 0 (the HotpotQA rule) and round
  to 6 decimals.

``soft`` is our `cuer_agent.metrics.answer.soft_correct`, maxed over the gold answers
(answer plus aliases for MuSiQue; the single answer for HotpotQA and 2Wiki).

Bad prediction files raise `cuer_agent.errors.DataError` naming the file and the line,
record or id; an unknown dataset raises `cuer_agent.errors.ConfigError`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from cuer_agent._json import JsonObject
from cuer_agent.data import canonical_name, dataset_about, dataset_names, load_dataset
from cuer_agent.data._example import Example
from cuer_agent.data._io import json_type, parse_json, read_jsonl, read_text
from cuer_agent.data._loaders import OfficialScorer
from cuer_agent.errors import ConfigError, DataError
from cuer_agent.metrics.answer import exact_match, f1_score, normalize_answer, soft_correct

__all__ = [
    "load_predictions",
    "official_datasets",
    "score_predictions",
    "squad_f1",
]



def official_datasets() -> list[str]:
    """Canonical names of the datasets whose official evaluator is reproduced here (each
    declares which one: `DatasetAbout.official`)."""
    return [name for name in dataset_names() if dataset_about(name).official is not None]

_DECIMALS = 6


def squad_f1(prediction: str, gold: str) -> float:
    """MuSiQue's (SQuAD-style) ``compute_f1``: token F1 without the yes/no rule.

    When either side has no tokens after normalisation the score is 1 if both have none,
    else 0.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(gold_tokens) & Counter(pred_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    # The official call passes (prediction, gold) into compute_f1(a_gold, a_pred); keep
    # its operand order so the floating-point result is the same.
    precision = 1.0 * same / len(gold_tokens)
    recall = 1.0 * same / len(pred_tokens)
    return (2 * precision * recall) / (precision + recall)


def _dataset_name(dataset: str) -> str:
    canonical = canonical_name(dataset)
    if dataset_about(canonical).official is None:
        raise ConfigError(f"no official evaluator for dataset {dataset!r}; "
                          f"valid names: {', '.join(official_datasets())} (or their aliases)")
    return canonical


def _scorer(canonical: str) -> OfficialScorer | None:
    return dataset_about(canonical).official


# -- prediction files -------------------------------------------------------------------

_HOTPOT_SHAPE = 'a JSON object {"answer": {id: answer string, ...}}'
_JSONL_SHAPE = 'JSON Lines of {"id": ..., "predicted_answer": ...}'


def _answers_from_object(path: Path, data: JsonObject) -> dict[str, str]:
    """The ``"answer"`` mapping of a HotpotQA-format prediction object."""
    answers = data["answer"]
    if not isinstance(answers, dict):
        raise DataError(path, f"'answer' must be a JSON object mapping ids to answer "
                        f"strings, got {json_type(answers)}")
    for qid, answer in answers.items():
        if not isinstance(answer, str):
            raise DataError(path, f"answer for id {qid!r} must be a string, got "
                            f"{json_type(answer)}")
    return dict(answers)


def _answers_from_jsonl(path: Path) -> dict[str, str]:
    """Predictions of a MuSiQue-format JSON Lines file, keyed by id."""
    answers: dict[str, str] = {}
    lines: dict[str, int | None] = {}
    for record in read_jsonl(path):
        qid = record.text("id")
        answer = record.text("predicted_answer")
        if qid in answers:
            record.fail(f"duplicate id {qid!r} (also line {lines[qid]})")
        answers[qid] = answer
        lines[qid] = record.line
    return answers


def _first_line_object(text: str) -> JsonObject | None:
    """The first non-blank line parsed as a JSON object, or None when it is not one."""
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def load_predictions(dataset: str, pred_path: str | Path) -> dict[str, str]:
    """``{id: predicted answer}`` from an official-format prediction file.

    HotpotQA format (a JSON object with an ``"answer"`` mapping) for every dataset; for
    MuSiQue also JSON Lines of ``{"id", "predicted_answer"}``. The format is detected from
    the content; anything else is a `DataError` naming the file and the line, record or id.
    """
    canonical = _dataset_name(dataset)
    path = Path(pred_path)
    text = read_text(path)
    jsonl_ok = _scorer(canonical) == "musique"
    expected = _HOTPOT_SHAPE + (f", or {_JSONL_SHAPE}" if jsonl_ok else "")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        first = _first_line_object(text)
        looks_jsonl = first is not None and not ("answer" in first and "id" not in first)
        if looks_jsonl and jsonl_ok:
            return _answers_from_jsonl(path)
        if looks_jsonl and first is not None and ("id" in first or "predicted_answer" in first):
            raise DataError(path, f"JSON Lines predictions ({_JSONL_SHAPE}) are accepted "
                            f"for musique only; for {canonical} use {_HOTPOT_SHAPE}",
                            line=1) from None
        parse_json(path, text)  # raises the DataError with json's line and message
        raise  # pragma: no cover - parse_json always raises on text json.loads rejected
    if not isinstance(data, dict):
        raise DataError(path, f"expected {expected}; got a JSON {json_type(data)}")
    if jsonl_ok and ("id" in data or "predicted_answer" in data):
        return _answers_from_jsonl(path)  # a one-line JSON Lines file
    if "answer" in data:
        return _answers_from_object(path, data)
    keys = ", ".join(repr(key) for key in list(data)[:5]) or "none"
    raise DataError(path, f"expected {expected}; the top-level object has no 'answer' "
                    f"key (keys: {keys})")


# -- scoring ----------------------------------------------------------------------------

def _scorers(canonical: str) -> tuple[Callable[[str, str], float], Callable[[str, str], float]]:
    if _scorer(canonical) == "musique":
        return exact_match, squad_f1
    return exact_match, f1_score


def _golds(canonical: str, example: Example) -> Sequence[str]:
    if _scorer(canonical) == "musique":
        return example.gold_answers
    return (example.answer,)


def _scored(canonical: str, example: Example) -> bool:
    """MuSiQue's evaluator scores answers of answerable records only."""
    return _scorer(canonical) != "musique" or example.meta.get("answerable", "true") == "true"


def score_predictions(dataset: str, gold_path: str | Path,
                      pred_path: str | Path) -> dict[str, float | int]:
    """Official-evaluator EM/F1 plus our soft correctness of a prediction file.

    Returns ``{"em", "f1", "soft"}`` (means over the gold examples, rounded to 6 decimals)
    and ``"n"`` (gold examples scored) and ``"missing"`` (those without a prediction, which
    score 0). See the module docstring for each dataset's official rules.
    """
    canonical = _dataset_name(dataset)
    gold = load_dataset(canonical, gold_path)
    predictions = load_predictions(canonical, pred_path)
    em_fn, f1_fn = _scorers(canonical)
    total_em = total_f1 = total_soft = 0.0
    n = missing = 0
    for example in gold.examples:
        if not _scored(canonical, example):
            continue
        n += 1
        prediction = predictions.get(example.id)
        if prediction is None:
            missing += 1
            continue
        golds = _golds(canonical, example)
        total_em += max(em_fn(prediction, g) for g in golds)
        total_f1 += max(f1_fn(prediction, g) for g in golds)
        total_soft += max(soft_correct(prediction, g) for g in golds)

    def mean(total: float) -> float:
        return round(total / n, _DECIMALS) if n else 0.0

    return {"em": mean(total_em), "f1": mean(total_f1), "soft": mean(total_soft),
            "n": n, "missing": missing}

"""`cuer_agent.metrics.official`: scores equal to the official HotpotQA / 2Wiki / MuSiQue
evaluators.

Hand-checked cases pin each rule; a faithful transcription of the official functions
(below) is the reference that our scores must equal on the shared real samples (skipped
when ``../shared/data`` is absent) under several synthetic prediction sets.
"""

from __future__ import annotations

import collections
import json
import random
import re
import string
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cuer_agent.data import default_data_dir, shared_sample_path
from cuer_agent.errors import ConfigError, DataError
from cuer_agent.metrics.official import load_predictions, score_predictions

# =======================================================================================
# Reference: transcriptions of the official evaluators (answer metrics only), kept as
# written upstream (untyped, same names, same operand order); only the file reading and
# the non-answer metrics are left out.
# =======================================================================================

# --- hotpotqa/hotpot: hotpot_evaluate_v1.py -------------------------------------------
# (Alab-NII/2wikimultihop: 2wikimultihop_evaluate.py copies these three functions
# verbatim and scores against dp['answer'] with `metrics['em'] += float(em)`.)


def hotpot_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def hotpot_f1_score(prediction, ground_truth):
    normalized_prediction = hotpot_normalize_answer(prediction)
    normalized_ground_truth = hotpot_normalize_answer(ground_truth)

    ZERO_METRIC = (0, 0, 0)

    if normalized_prediction in ['yes', 'no', 'noanswer'] and \
            normalized_prediction != normalized_ground_truth:
        return ZERO_METRIC
    if normalized_ground_truth in ['yes', 'no', 'noanswer'] and \
            normalized_prediction != normalized_ground_truth:
        return ZERO_METRIC

    prediction_tokens = normalized_prediction.split()
    ground_truth_tokens = normalized_ground_truth.split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return ZERO_METRIC
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1, precision, recall


def hotpot_exact_match_score(prediction, ground_truth):
    return (hotpot_normalize_answer(prediction) == hotpot_normalize_answer(ground_truth))


def hotpot_eval(prediction, gold):
    """`eval()` of hotpot_evaluate_v1.py, answer part (files already loaded)."""
    metrics = {'em': 0, 'f1': 0}
    for dp in gold:
        cur_id = dp['_id']
        if cur_id not in prediction['answer']:
            pass  # print('missing answer {}'.format(cur_id))
        else:
            em = hotpot_exact_match_score(prediction['answer'][cur_id], dp['answer'])
            f1, _prec, _recall = hotpot_f1_score(prediction['answer'][cur_id], dp['answer'])
            metrics['em'] += float(em)
            metrics['f1'] += f1
    N = len(gold)
    for k in metrics:
        metrics[k] /= N
    return metrics


# --- StonyBrookNLP/musique: metrics/answer.py -----------------------------------------

def musique_normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text):
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def musique_get_tokens(s):
    if not s:
        return []
    return musique_normalize_answer(s).split()


def musique_compute_exact(a_gold, a_pred):
    return int(musique_normalize_answer(a_gold) == musique_normalize_answer(a_pred))


def musique_compute_f1(a_gold, a_pred):
    gold_toks = musique_get_tokens(a_gold)
    pred_toks = musique_get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def musique_metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


class MusiqueAnswerMetric:
    def __init__(self) -> None:
        self._total_em = 0.0
        self._total_f1 = 0.0
        self._count = 0

    def __call__(self, predicted_answer, ground_truth_answers):
        exact_scores = musique_metric_max_over_ground_truths(
            musique_compute_exact, predicted_answer, ground_truth_answers
        )
        f1_scores = musique_metric_max_over_ground_truths(
            musique_compute_f1, predicted_answer, ground_truth_answers
        )

        self._total_em += int(exact_scores)
        self._total_f1 += f1_scores
        self._count += 1

    def get_metric(self):
        exact_match = self._total_em / self._count if self._count > 0 else 0
        f1_score = self._total_f1 / self._count if self._count > 0 else 0
        return exact_match, f1_score


# --- StonyBrookNLP/musique: evaluate_v1.0.py, evaluate() answer part --------------------

def musique_evaluate(prediction_instances, ground_truth_instances):
    """The official loop, except that it matches predictions by id instead of asserting
    equal order: a missing prediction adds 0 but counts (our documented extension, the
    HotpotQA rule). With every prediction present and in order it is the official loop."""
    answer_metric = MusiqueAnswerMetric()
    by_id = {instance["id"]: instance for instance in prediction_instances}
    for ground_truth_instance in ground_truth_instances:
        prediction_instance = by_id.get(ground_truth_instance["id"])
        ground_truth_answers = [
            ground_truth_instance["answer"]
        ] + ground_truth_instance["answer_aliases"]
        ground_truth_sufficiency = ground_truth_instance["answerable"]
        if ground_truth_sufficiency:
            if prediction_instance is None:
                answer_metric._count += 1  # extension: missing scores 0
                continue
            predicted_answer = prediction_instance["predicted_answer"]
            answer_metric(predicted_answer, ground_truth_answers)
    em, f1 = answer_metric.get_metric()
    return {"em": em, "f1": f1}


# =======================================================================================
# Helpers
# =======================================================================================

def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def hotpot_gold(tmp_path: Path, answers: dict[str, str]) -> Path:
    records = [{"_id": qid, "question": f"Question {qid}?", "answer": answer,
                "context": [["Title", ["A sentence."]]],
                "supporting_facts": [["Title", 0]]}
               for qid, answer in answers.items()]
    return write_json(tmp_path / "gold.json", records)


def twowiki_gold(tmp_path: Path, answers: dict[str, str]) -> Path:
    records = [{"_id": qid, "question": f"Question {qid}?", "answer": answer,
                "context": [["Title", ["A sentence."]]],
                "supporting_facts": [["Title", 0]], "evidences": []}
               for qid, answer in answers.items()]
    return write_json(tmp_path / "gold.json", records)


def musique_gold(tmp_path: Path, golds: dict[str, tuple[str, list[str]]],
                 unanswerable: tuple[str, ...] = ()) -> Path:
    records = [{"id": qid, "question": f"Question {qid}?", "answer": answer,
                "answer_aliases": aliases, "answerable": qid not in unanswerable,
                "paragraphs": [{"idx": 0, "title": "Title", "paragraph_text": "Text.",
                                "is_supporting": True}],
                "question_decomposition": [{"id": 1, "question": "Q?", "answer": answer,
                                            "paragraph_support_idx": 0}]}
               for qid, (answer, aliases) in golds.items()]
    return write_jsonl(tmp_path / "gold.jsonl", records)


def hotpot_preds(tmp_path: Path, answers: dict[str, Any], **extra: Any) -> Path:
    return write_json(tmp_path / "pred.json", {"answer": answers, **extra})


def data_error(call: Callable[[], object]) -> DataError:
    with pytest.raises(DataError) as info:
        call()
    return info.value


# =======================================================================================
# Hand-checked rules
# =======================================================================================

def test_hotpotqa_f1_is_zero_when_a_yes_no_side_differs(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "yes"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q1": "Yes, it is"}))
    assert scores["em"] == 0.0
    assert scores["f1"] == 0.0  # "yes it is" vs "yes": the yes/no rule, not token F1 0.5


def test_hotpotqa_noanswer_prediction_gets_f1_zero_even_with_overlap(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "no answer"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q1": "noanswer"}))
    assert scores["f1"] == 0.0


def test_musique_f1_has_no_yes_no_rule(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("yes", [])})
    scores = score_predictions("musique", gold, hotpot_preds(tmp_path, {"q1": "Yes, it is"}))
    # pred tokens [yes, it, is], gold [yes]: p = 1/3, r = 1 → F1 = 0.5
    assert scores["em"] == 0.0
    assert scores["f1"] == 0.5


def test_musique_empty_prediction_and_empty_gold_score_one(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("The", [])})  # normalises to ""
    scores = score_predictions("musique", gold, hotpot_preds(tmp_path, {"q1": ""}))
    assert (scores["em"], scores["f1"]) == (1.0, 1.0)


def test_hotpotqa_empty_prediction_and_empty_gold_get_em_one_but_f1_zero(
        tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "The"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q1": "..."}))
    assert (scores["em"], scores["f1"]) == (1.0, 0.0)


def test_musique_empty_prediction_against_nonempty_gold_scores_zero(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("Paris", [])})
    scores = score_predictions("musique", gold, hotpot_preds(tmp_path, {"q1": ""}))
    assert (scores["em"], scores["f1"], scores["soft"]) == (0.0, 0.0, 0.0)


def test_musique_em_and_f1_are_max_over_answer_and_aliases(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("Robert Smith", ["Bob Smith", "R. Smith"]),
                                   "q2": ("Robert Smith", ["Bob Smith"])})
    preds = hotpot_preds(tmp_path, {"q1": "bob smith", "q2": "Bob"})
    scores = score_predictions("musique", gold, preds)
    # q1: EM 1 against the alias; q2: "bob" vs "bob smith" p = 1, r = 1/2 → F1 2/3
    assert scores["em"] == 0.5
    assert scores["f1"] == round((1.0 + 2 / 3) / 2, 6)


def test_hotpotqa_scores_against_the_single_answer(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "New York"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q1": "New York City"}))
    assert (scores["em"], scores["f1"]) == (0.0, 0.8)  # p = 2/3, r = 1


def test_soft_is_max_over_gold_answers(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("Bobby", ["Robert Smith"])})
    scores = score_predictions("musique", gold,
                               hotpot_preds(tmp_path, {"q1": "Robert Smith Jr"}))
    assert (scores["em"], scores["f1"], scores["soft"]) == (0.0, 0.8, 1.0)


def test_missing_predictions_score_zero_and_are_counted(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "Paris", "q2": "Rome", "q3": "Oslo", "q4": "Bern"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q2": "Rome"}))
    assert scores == {"em": 0.25, "f1": 0.25, "soft": 0.25, "n": 4, "missing": 3}


def test_means_are_rounded_to_six_decimals(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "Paris", "q2": "Rome", "q3": "Oslo"})
    scores = score_predictions("hotpotqa", gold, hotpot_preds(tmp_path, {"q1": "Paris"}))
    assert scores["em"] == 0.333333


def test_other_top_level_keys_and_unknown_ids_are_ignored(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "Paris"})
    preds = hotpot_preds(tmp_path, {"q1": "Paris", "zz": "Rome"},
                         sp={"q1": [["Title", 0]]}, evidence={"q1": []})
    assert score_predictions("hotpotqa", gold, preds) == {
        "em": 1.0, "f1": 1.0, "soft": 1.0, "n": 1, "missing": 0}


def test_musique_unanswerable_gold_records_are_not_scored(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("Paris", []), "q2": ("Rome", [])},
                        unanswerable=("q2",))
    scores = score_predictions("musique", gold, hotpot_preds(tmp_path, {"q1": "Paris"}))
    assert (scores["em"], scores["n"], scores["missing"]) == (1.0, 1, 0)


def test_musique_official_jsonl_predictions_are_accepted(tmp_path: Path) -> None:
    gold = musique_gold(tmp_path, {"q1": ("Paris", []), "q2": ("Rome", [])})
    preds = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "q1", "predicted_answer": "Paris", "predicted_support_idxs": [0],
         "predicted_answerable": True},
        {"id": "q2", "predicted_answer": "Milan", "predicted_support_idxs": [0],
         "predicted_answerable": True},
    ])
    scores = score_predictions("musique", gold, preds)
    assert (scores["em"], scores["n"], scores["missing"]) == (0.5, 2, 0)


def test_musique_one_line_jsonl_predictions_are_accepted(tmp_path: Path) -> None:
    preds = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "predicted_answer": "Paris"}])
    assert load_predictions("musique", preds) == {"q1": "Paris"}


def test_musique_accepts_hotpotqa_prediction_format(tmp_path: Path) -> None:
    preds = hotpot_preds(tmp_path, {"q1": "Paris"}, sp={})
    assert load_predictions("musique", preds) == {"q1": "Paris"}


@pytest.mark.parametrize("alias, writer", [("hotpotqa_fullwiki", hotpot_gold),
                                           ("TwoWiki", twowiki_gold),
                                           ("2wikimultihopqa", twowiki_gold)])
def test_dataset_aliases_are_accepted(tmp_path: Path, alias: str,
                                      writer: Callable[[Path, dict[str, str]], Path]) -> None:
    gold = writer(tmp_path, {"q1": "yes"})
    scores = score_predictions(alias, gold, hotpot_preds(tmp_path, {"q1": "yes sir"}))
    assert (scores["em"], scores["f1"], scores["n"]) == (0.0, 0.0, 1)


@pytest.mark.parametrize("name", ["nope", "synthetic"])
def test_unknown_dataset_is_config_error(tmp_path: Path, name: str) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "Paris"})
    with pytest.raises(ConfigError, match="2wiki, hotpotqa, musique"):  # registry order
        score_predictions(name, gold, hotpot_preds(tmp_path, {"q1": "Paris"}))


# --- bad prediction files ----------------------------------------------------------------

def test_missing_prediction_file_is_data_error_naming_it(tmp_path: Path) -> None:
    gold = hotpot_gold(tmp_path, {"q1": "Paris"})
    missing = tmp_path / "nowhere.json"
    err = data_error(lambda: score_predictions("hotpotqa", gold, missing))
    assert str(missing) in str(err) and "not found" in str(err)


def test_invalid_json_prediction_file_names_the_line(tmp_path: Path) -> None:
    preds = tmp_path / "pred.json"
    preds.write_text('{\n  "answer": {\n    "q1": "Paris",\n  }\n}\n', encoding="utf-8")
    err = data_error(lambda: load_predictions("hotpotqa", preds))
    assert err.path == str(preds) and err.line == 4
    assert f"{preds}, line 4" in str(err) and "invalid JSON" in str(err)


def test_invalid_jsonl_prediction_line_is_named(tmp_path: Path) -> None:
    preds = tmp_path / "pred.jsonl"
    preds.write_text('{"id": "q1", "predicted_answer": "a"}\n'
                     '{"id": "q2", "predicted_answer": "b"}\n'
                     '{"id": "q3", "predicted_answer": }\n', encoding="utf-8")
    err = data_error(lambda: load_predictions("musique", preds))
    assert err.line == 3 and f"{preds}, line 3" in str(err)


def test_non_string_answer_names_the_id(tmp_path: Path) -> None:
    preds = hotpot_preds(tmp_path, {"q1": "Paris", "q7": 42})
    err = data_error(lambda: load_predictions("2wiki", preds))
    assert str(preds) in str(err)
    assert "'q7'" in str(err) and "must be a string, got number" in str(err)


def test_non_string_jsonl_answer_names_the_line(tmp_path: Path) -> None:
    preds = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "predicted_answer": "a"},
                                                  {"id": "q2", "predicted_answer": None}])
    err = data_error(lambda: load_predictions("musique", preds))
    assert err.line == 2 and "'predicted_answer' must be a string, got null" in str(err)


def test_jsonl_line_without_predicted_answer_is_named(tmp_path: Path) -> None:
    preds = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "predicted_answer": "a"},
                                                  {"id": "q2", "answer": "b"}])
    err = data_error(lambda: load_predictions("musique", preds))
    assert err.line == 2 and "missing key 'predicted_answer'" in str(err)


def test_duplicate_jsonl_id_names_both_lines(tmp_path: Path) -> None:
    preds = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "predicted_answer": "a"},
                                                  {"id": "q1", "predicted_answer": "b"}])
    err = data_error(lambda: load_predictions("musique", preds))
    assert err.line == 2 and "duplicate id 'q1' (also line 1)" in str(err)


def test_jsonl_predictions_are_rejected_for_hotpotqa(tmp_path: Path) -> None:
    preds = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "predicted_answer": "a"},
                                                  {"id": "q2", "predicted_answer": "b"}])
    err = data_error(lambda: load_predictions("hotpotqa", preds))
    assert str(preds) in str(err) and "musique only" in str(err)


@pytest.mark.parametrize("content, fragment", [
    ([{"q1": "Paris"}], "got a JSON array"),
    ({"sp": {}}, "no 'answer' key"),
    ({"answer": ["Paris"]}, "'answer' must be a JSON object"),
    ("Paris", "got a JSON string"),
])
def test_wrong_prediction_shape_is_data_error(tmp_path: Path, content: Any,
                                              fragment: str) -> None:
    preds = write_json(tmp_path / "pred.json", content)
    err = data_error(lambda: load_predictions("musique", preds))
    assert str(preds) in str(err) and fragment in str(err)


def test_empty_prediction_file_is_data_error(tmp_path: Path) -> None:
    preds = tmp_path / "pred.json"
    preds.write_text("\n", encoding="utf-8")
    err = data_error(lambda: load_predictions("hotpotqa", preds))
    assert str(preds) in str(err) and "empty" in str(err)


# =======================================================================================
# Equal to the official reference on the shared real samples
# =======================================================================================

Raw = dict[str, Any]
PredictionSet = Callable[[list[Raw]], dict[str, str | None]]


def _answer(record: Raw) -> str:
    return str(record["answer"])


def _first_title(record: Raw) -> str:
    if "paragraphs" in record:
        return str(record["paragraphs"][0]["title"])
    context = record["context"]
    return str(context[0][0]) if context else ""  # fullwiki records may have no context


def _perturb(answer: str, i: int) -> str:
    tokens = answer.split()
    variants = [
        answer.upper(),
        f"The {answer}.",
        " ".join(tokens[:-1]),
        f"{answer} and some extra words",
        tokens[0] if tokens else "",
        "",
        "the",
        " ".join(reversed(tokens)) + " " + (tokens[0] if tokens else "x"),
    ]
    return variants[i % len(variants)]


def _yes_no(record: Raw, i: int) -> str:
    answer = _answer(record)
    if answer.strip().lower() in ("yes", "no"):
        swapped = "no" if answer.strip().lower() == "yes" else "Yes"
        return (swapped, f"{answer}, it is", f"{answer}.")[i % 3]
    return ("yes", "noanswer", f"no {answer}", answer)[i % 4]


def _mixed_with_missing(records: list[Raw]) -> dict[str, str | None]:
    rng = random.Random(7)
    out: dict[str, str | None] = {}
    for record in records:
        roll = rng.random()
        if roll < 0.3:
            out[_id(record)] = None
        elif roll < 0.6:
            out[_id(record)] = _answer(record)
        else:
            out[_id(record)] = _perturb(_answer(record), rng.randrange(8))
    return out


def _id(record: Raw) -> str:
    return str(record.get("_id", record.get("id")))


def _last_alias(record: Raw) -> str:
    aliases = record.get("answer_aliases") or [_answer(record)]
    return str(aliases[-1])


PREDICTION_SETS: dict[str, PredictionSet] = {
    "gold": lambda recs: {_id(r): _answer(r) for r in recs},
    "last_alias": lambda recs: {_id(r): _last_alias(r) for r in recs},
    "perturbed": lambda recs: {_id(r): _perturb(_answer(r), i) for i, r in enumerate(recs)},
    "first_title": lambda recs: {_id(r): _first_title(r) for r in recs},
    "yes_no": lambda recs: {_id(r): _yes_no(r, i) for i, r in enumerate(recs)},
    "mixed_missing": _mixed_with_missing,
}


def _sample(name: str) -> Path:
    path = shared_sample_path(name)
    if path is None:
        pytest.skip(f"shared {name} sample not found under {default_data_dir()} "
                    "(set CUER_DATA_DIR to the shared data directory)")
    return path


def _read_gold(path: Path) -> list[Raw]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return list(json.loads(text))


def _reference(name: str, gold: list[Raw], predictions: dict[str, str | None]) -> dict[str, float]:
    present = {qid: answer for qid, answer in predictions.items() if answer is not None}
    if name == "musique":
        return musique_evaluate(
            [{"id": qid, "predicted_answer": answer} for qid, answer in present.items()], gold)
    return hotpot_eval({"answer": present, "sp": {}}, gold)


@pytest.mark.parametrize("set_name", list(PREDICTION_SETS))
@pytest.mark.parametrize("name", ["hotpotqa", "hotpotqa_fullwiki", "2wiki", "musique"])
def test_scores_equal_official_reference_on_shared_sample(tmp_path: Path, name: str,
                                                          set_name: str) -> None:
    gold_path = _sample(name)
    gold = _read_gold(gold_path)
    predictions = PREDICTION_SETS[set_name](gold)
    present = {qid: answer for qid, answer in predictions.items() if answer is not None}
    expected = _reference(name, gold, predictions)

    scores = score_predictions(name, gold_path, hotpot_preds(tmp_path, present, sp={}))
    assert scores["em"] == round(expected["em"], 6)
    assert scores["f1"] == round(expected["f1"], 6)
    assert scores["n"] == len(gold)
    assert scores["missing"] == len(gold) - len(present)


@pytest.mark.parametrize("set_name", ["perturbed", "yes_no", "mixed_missing"])
def test_musique_jsonl_predictions_equal_official_reference(tmp_path: Path,
                                                            set_name: str) -> None:
    gold_path = _sample("musique")
    gold = _read_gold(gold_path)
    predictions = PREDICTION_SETS[set_name](gold)
    rows = [{"id": qid, "predicted_answer": answer, "predicted_support_idxs": [0, 1],
             "predicted_answerable": True}
            for qid, answer in predictions.items() if answer is not None]
    expected = _reference("musique", gold, predictions)

    scores = score_predictions("musique", gold_path, write_jsonl(tmp_path / "p.jsonl", rows))
    assert (scores["em"], scores["f1"]) == (round(expected["em"], 6), round(expected["f1"], 6))


def test_prediction_sets_exercise_the_rules_where_the_scripts_differ() -> None:
    """Guard: on these sets the HotpotQA and MuSiQue rules give different numbers, so the
    equality tests above really pin which rule each dataset uses."""
    hotpot_gold_records = _read_gold(_sample("hotpotqa"))
    predictions = PREDICTION_SETS["yes_no"](hotpot_gold_records)
    as_musique = [{"id": r["_id"], "answer": r["answer"], "answer_aliases": [],
                   "answerable": True} for r in hotpot_gold_records]
    assert (hotpot_eval({"answer": predictions}, hotpot_gold_records)["f1"]
            != musique_evaluate([{"id": k, "predicted_answer": v}
                                 for k, v in predictions.items()], as_musique)["f1"])

    musique_records = _read_gold(_sample("musique"))
    predictions = PREDICTION_SETS["last_alias"](musique_records)
    as_hotpot = [{"_id": r["id"], "answer": r["answer"]} for r in musique_records]
    assert (hotpot_eval({"answer": predictions}, as_hotpot)["f1"]
            != musique_evaluate([{"id": k, "predicted_answer": v}
                                 for k, v in predictions.items()], musique_records)["f1"])

"""Loaders for HotpotQA, 2WikiMultihopQA and MuSiQue: mapping, bad input, the registry,
and the shared real samples (skipped when ../shared/data is absent)."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cuer_agent.data import (
    Dataset,
    Example,
    canonical_name,
    dataset_names,
    default_data_dir,
    load_dataset,
    load_hotpotqa,
    load_musique,
    load_twowiki,
    shared_sample_path,
)
from cuer_agent.data.hotpotqa import join_sentences
from cuer_agent.data.twowiki import match_support_title
from cuer_agent.errors import ConfigError, DataError

Loader = Callable[..., Dataset]

# ---------------------------------------------------------------- record builders


Record = dict[str, Any]


def changed(record: Record, **changes: Any) -> Record:
    """A fresh deep copy of `record` with `changes` set (a test may edit what it gets)."""
    return {**copy.deepcopy(record), **changes}


HOTPOT: Record = {
    "_id": "h1",
    "question": "Which city is the capital of the country where Alpha was born?",
    "answer": "Zed",
    "type": "bridge",
    "level": "hard",
    "context": [
        ["Alpha", ["Alpha was born in Beta.", " Alpha wrote books."]],
        ["Beta", ["Beta is a country.", " Its capital is Zed."]],
        ["Gamma", ["Gamma is unrelated."]],
    ],
    "supporting_facts": [["Alpha", 0], ["Beta", 1], ["Alpha", 1]],
}


TWOWIKI: Record = {
    "_id": "w1",
    "type": "compositional",
    "question": "Who is the father of the director of film The Ride (1994 Film)?",
    "answer": "Zdeněk Svěrák",
    "context": [
        ["Other Film", ["Other Film is a film.", "It is unrelated."]],
        ["The Ride (1994 film)", ["The Ride is a 1994 film.", "It was directed by Jan."]],
        ["Jan Svěrák", ["Jan Svěrák is a director.", "His father is Zdeněk Svěrák."]],
    ],
    "entity_ids": "Q1_Q2",
    "supporting_facts": [["The Ride (1994 film)", 1], ["Jan Svěrák", 1]],
    "evidences": [["The Ride", "director", "Jan Svěrák"],
                  ["Jan Svěrák", "father", "Zdeněk Svěrák"]],
    "evidences_id": [["Q1", "director", "Q2"], ["Q2", "father", "Q3"]],
    "answer_id": "Q3",
}


MUSIQUE: Record = {
    "id": "3hop1__1_2_3",
    "question": "Where was the founder of the maker of the Oriole born?",
    "answer": "Springfield",
    "answer_aliases": ["Springfield, Ohio"],
    "answerable": True,
    "paragraphs": [
        {"idx": 0, "title": "Noise", "paragraph_text": "Noise text.",
         "is_supporting": False},
        {"idx": 1, "title": "Oriole", "paragraph_text": "Made by Acme.",
         "is_supporting": True},
        {"idx": 2, "title": "Acme", "paragraph_text": "Founded by Bob.",
         "is_supporting": True},
        {"idx": 3, "title": "Bob", "paragraph_text": "Born in Springfield.",
         "is_supporting": True},
    ],
    "question_decomposition": [
        {"id": 1, "question": "Who made the Oriole?", "answer": "Acme",
         "paragraph_support_idx": 1},
        {"id": 2, "question": "#1 >> founded by", "answer": "Bob",
         "paragraph_support_idx": 2},
        {"id": 3, "question": "Where was #2 born?", "answer": "Springfield",
         "paragraph_support_idx": 3},
    ],
}


def hotpot_record(**changes: Any) -> Record:
    return changed(HOTPOT, **changes)


def twowiki_record(**changes: Any) -> Record:
    return changed(TWOWIKI, **changes)


def musique_record(**changes: Any) -> Record:
    return changed(MUSIQUE, **changes)


def write_json(path: Path, records: Any) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load_one(loader: Loader, tmp_path: Path, record: dict[str, Any]) -> Example:
    if loader is load_musique:
        path = write_jsonl(tmp_path / "data.jsonl", [record])
    else:
        path = write_json(tmp_path / "data.json", [record])
    [example] = loader(path).examples
    return example


def data_error(call: Callable[[], object]) -> DataError:
    with pytest.raises(DataError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message, message
    return caught.value


def assert_names(err: DataError, path: Path, *fragments: str) -> None:
    message = str(err)
    assert message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


# ---------------------------------------------------------------- HotpotQA mapping


def test_hotpotqa_maps_id_question_answer_type_and_level(tmp_path: Path) -> None:
    example = load_one(load_hotpotqa, tmp_path, hotpot_record())
    assert (example.id, example.dataset, example.answer) == ("h1", "hotpotqa", "Zed")
    assert example.question.startswith("Which city")
    assert example.qtype == "bridge"
    assert example.meta == {"level": "hard"}
    assert example.aliases == ()


def test_hotpotqa_passage_index_is_list_position(tmp_path: Path) -> None:
    example = load_one(load_hotpotqa, tmp_path, hotpot_record())
    assert [(p.title, p.index) for p in example.passages] == [
        ("Alpha", 0), ("Beta", 1), ("Gamma", 2)]


def test_hotpotqa_sentences_with_own_leading_space_join_without_extra_space(
        tmp_path: Path) -> None:
    example = load_one(load_hotpotqa, tmp_path, hotpot_record())
    assert example.passages[0].text == "Alpha was born in Beta. Alpha wrote books."


def test_hotpotqa_supporting_titles_unique_in_first_mention_order(tmp_path: Path) -> None:
    facts = [["Beta", 1], ["Alpha", 0], ["Beta", 0]]
    example = load_one(load_hotpotqa, tmp_path, hotpot_record(supporting_facts=facts))
    assert example.supporting_titles == ("Beta", "Alpha")


def test_hotpotqa_has_no_hops_so_n_hops_counts_supporting_titles(tmp_path: Path) -> None:
    example = load_one(load_hotpotqa, tmp_path, hotpot_record())
    assert example.hops == ()
    assert example.n_hops == 2


def test_hotpotqa_supporting_title_absent_from_context_is_valid(tmp_path: Path) -> None:
    facts = [["Alpha", 0], ["Not Retrieved", 0]]
    example = load_one(load_hotpotqa, tmp_path, hotpot_record(supporting_facts=facts))
    assert example.supporting_titles == ("Alpha", "Not Retrieved")


def test_hotpotqa_optional_type_and_level_may_be_absent(tmp_path: Path) -> None:
    record = hotpot_record()
    del record["type"], record["level"]
    example = load_one(load_hotpotqa, tmp_path, record)
    assert (example.qtype, example.meta) == ("", {})


# ---------------------------------------------------------------- sentence joining


@pytest.mark.parametrize(("sentences", "joined"), [
    (["A.", " B.", " C."], "A. B. C."),          # HotpotQA: own leading space
    (["A.", "B.", "C."], "A. B. C."),            # 2Wiki: no leading space
    (["A.", "\tB."], "A.\tB."),                  # any whitespace counts
    (["A. ", "B."], "A. B."),                    # trailing space already there
    (["A.", "", "B."], "A. B."),                 # empty sentence adds nothing
    ([], ""),
])
def test_join_sentences_adds_one_space_only_where_none_is_shipped(
        sentences: list[str], joined: str) -> None:
    assert join_sentences(sentences) == joined


# ---------------------------------------------------------------- 2Wiki mapping


def test_twowiki_maps_fields_and_joins_sentences_with_one_space(tmp_path: Path) -> None:
    example = load_one(load_twowiki, tmp_path, twowiki_record())
    assert (example.id, example.dataset, example.qtype) == ("w1", "2wiki", "compositional")
    assert example.passages[1].text == "The Ride is a 1994 film. It was directed by Jan."
    assert example.supporting_titles == ("The Ride (1994 film)", "Jan Svěrák")
    assert example.meta == {}


def test_twowiki_hops_come_from_evidence_triples_in_order(tmp_path: Path) -> None:
    example = load_one(load_twowiki, tmp_path, twowiki_record())
    assert [(h.relation, h.answer, h.question) for h in example.hops] == [
        ("director", "Jan Svěrák", None), ("father", "Zdeněk Svěrák", None)]
    assert example.n_hops == 2


def test_twowiki_hop_support_title_is_best_token_match_of_subject(tmp_path: Path) -> None:
    example = load_one(load_twowiki, tmp_path, twowiki_record())
    assert [h.support_title for h in example.hops] == ["The Ride (1994 film)", "Jan Svěrák"]


def test_support_title_tie_goes_to_first_mentioned_title() -> None:
    assert match_support_title("Myra", ["Myra (one)", "Myra (two)"]) == "Myra (one)"


def test_support_title_prefers_title_with_fewest_unmatched_tokens() -> None:
    titles = ["Gevherhan Sultan (daughter of Selim II)", "Selim II"]
    assert match_support_title("Selim II", titles) == "Selim II"


def test_support_title_ignores_stop_words_case_and_accents() -> None:
    titles = ["Maria Josepha of Bavaria", "Maria Amalia, Holy Roman Empress"]
    assert match_support_title("maria amália of austria", titles) == titles[1]


def test_support_title_without_overlap_falls_back_to_first_title() -> None:
    assert match_support_title("Pasaporte a Río", ["Passport to Rio", "Daniel"]) == (
        "Passport to Rio")


def test_support_title_is_none_without_supporting_facts(tmp_path: Path) -> None:
    example = load_one(load_twowiki, tmp_path, twowiki_record(supporting_facts=[]))
    assert [h.support_title for h in example.hops] == [None, None]


# ---------------------------------------------------------------- MuSiQue mapping


def test_musique_maps_id_answer_aliases_qtype_and_answerable(tmp_path: Path) -> None:
    example = load_one(load_musique, tmp_path, musique_record())
    assert (example.id, example.dataset, example.answer) == (
        "3hop1__1_2_3", "musique", "Springfield")
    assert example.aliases == ("Springfield, Ohio",)
    assert example.qtype == "3hop1"
    assert example.meta == {"answerable": "true"}


def test_musique_unanswerable_meta_is_false_string(tmp_path: Path) -> None:
    example = load_one(load_musique, tmp_path, musique_record(answerable=False))
    assert example.meta == {"answerable": "false"}


def test_musique_id_without_prefix_has_empty_qtype(tmp_path: Path) -> None:
    assert load_one(load_musique, tmp_path, musique_record(id="plain")).qtype == ""


def test_musique_passage_index_is_idx(tmp_path: Path) -> None:
    paragraphs = [{"idx": 7, "title": "A", "paragraph_text": "a"},
                  {"idx": 3, "title": "B", "paragraph_text": "b"}]
    decomposition = [{"question": "q", "answer": "a", "paragraph_support_idx": 3}]
    example = load_one(load_musique, tmp_path, musique_record(
        paragraphs=paragraphs, question_decomposition=decomposition))
    assert [(p.title, p.text, p.index) for p in example.passages] == [
        ("A", "a", 7), ("B", "b", 3)]
    assert example.hops[0].support_title == "B"


def test_musique_resolves_hash_references_to_hop_answers(tmp_path: Path) -> None:
    example = load_one(load_musique, tmp_path, musique_record())
    assert [h.question for h in example.hops] == [
        "Who made the Oriole?", "Acme >> founded by", "Where was Bob born?"]
    assert [h.answer for h in example.hops] == ["Acme", "Bob", "Springfield"]


def test_musique_resolves_references_next_to_punctuation(tmp_path: Path) -> None:
    record = musique_record()
    record["question_decomposition"][2]["question"] = "Besides #1 , was (#2) #2's #1."
    example = load_one(load_musique, tmp_path, record)
    assert example.hops[2].question == "Besides Acme , was (Bob) Bob's Acme."


def test_musique_multi_digit_reference_is_not_read_as_single_digit(tmp_path: Path) -> None:
    steps = [{"question": f"q{k}", "answer": f"A{k}", "paragraph_support_idx": 0}
             for k in range(1, 12)]
    steps[-1]["question"] = "#11 vs #1"
    steps[-1]["answer"] = "final"
    example = load_one(load_musique, tmp_path, musique_record(question_decomposition=steps))
    assert example.hops[-1].question == "final vs A1"


def test_musique_hop_support_title_is_paragraph_with_support_idx(tmp_path: Path) -> None:
    example = load_one(load_musique, tmp_path, musique_record())
    assert [h.support_title for h in example.hops] == ["Oriole", "Acme", "Bob"]


def test_musique_supporting_titles_follow_hop_order_without_repeats(tmp_path: Path) -> None:
    record = musique_record()
    record["question_decomposition"][2]["paragraph_support_idx"] = 1
    example = load_one(load_musique, tmp_path, record)
    assert example.supporting_titles == ("Oriole", "Acme")
    assert example.n_hops == 3


def test_musique_null_support_idx_gives_no_support_title(tmp_path: Path) -> None:
    record = musique_record()
    record["question_decomposition"][0]["paragraph_support_idx"] = None
    example = load_one(load_musique, tmp_path, record)
    assert example.hops[0].support_title is None
    assert example.supporting_titles == ("Acme", "Bob")


def test_musique_optional_aliases_and_answerable_may_be_absent(tmp_path: Path) -> None:
    record = musique_record()
    del record["answer_aliases"], record["answerable"]
    example = load_one(load_musique, tmp_path, record)
    assert (example.aliases, example.meta) == ((), {})


def test_musique_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    line = json.dumps(musique_record())
    path.write_text(f"\n{line}\n\n   \n{json.dumps(musique_record(id='2hop__9'))}\r\n")
    assert [e.id for e in load_musique(path).examples] == ["3hop1__1_2_3", "2hop__9"]


# ---------------------------------------------------------------- bad input: files

LOADERS: list[tuple[Loader, str]] = [
    (load_hotpotqa, "json"), (load_twowiki, "json"), (load_musique, "jsonl")]
LOADER_IDS = ["hotpotqa", "2wiki", "musique"]


@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_missing_file_is_data_error(tmp_path: Path, loader: Loader, suffix: str) -> None:
    path = tmp_path / f"absent.{suffix}"
    assert_names(data_error(lambda: loader(path)), path, "file not found")


@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_directory_is_data_error(tmp_path: Path, loader: Loader, suffix: str) -> None:
    assert_names(data_error(lambda: loader(tmp_path)), tmp_path, "is a directory")


@pytest.mark.parametrize("content", ["", "  \n\n"], ids=["empty", "whitespace"])
@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_empty_file_is_data_error(tmp_path: Path, loader: Loader, suffix: str,
                                  content: str) -> None:
    path = tmp_path / f"empty.{suffix}"
    path.write_text(content)
    assert_names(data_error(lambda: loader(path)), path, "file is empty")


@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_non_utf8_file_is_data_error_with_line(tmp_path: Path, loader: Loader,
                                               suffix: str) -> None:
    path = tmp_path / f"latin1.{suffix}"
    path.write_bytes(b'[\n{"_id": "caf\xe9"}]')
    assert_names(data_error(lambda: loader(path)), path, "line 2", "not UTF-8")


@pytest.mark.parametrize("loader", [load_hotpotqa, load_twowiki], ids=LOADER_IDS[:2])
def test_empty_json_array_is_data_error(tmp_path: Path, loader: Loader) -> None:
    path = write_json(tmp_path / "none.json", [])
    assert_names(data_error(lambda: loader(path)), path, "no records in file")


@pytest.mark.parametrize("loader", [load_hotpotqa, load_twowiki], ids=LOADER_IDS[:2])
def test_invalid_json_reports_line_number(tmp_path: Path, loader: Loader) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"_id": "a",\n   "question": oops}\n]')
    assert_names(data_error(lambda: loader(path)), path, "line 3", "invalid JSON")


@pytest.mark.parametrize("loader", [load_hotpotqa, load_twowiki], ids=LOADER_IDS[:2])
def test_truncated_json_reports_line_number(tmp_path: Path, loader: Loader) -> None:
    path = tmp_path / "cut.json"
    full = json.dumps([hotpot_record(), twowiki_record()], indent=1)
    path.write_text(full[: len(full) // 2])
    err = data_error(lambda: loader(path))
    assert_names(err, path, "invalid JSON")
    assert err.line is not None and err.line > 1


@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_absurdly_deep_nesting_is_data_error(tmp_path: Path, loader: Loader,
                                             suffix: str) -> None:
    path = tmp_path / f"deep.{suffix}"
    path.write_text("[" * 200_000)
    assert_names(data_error(lambda: loader(path)), path, "nesting too deep")


def test_json_lines_file_given_to_json_loader_hints_at_format(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", [hotpot_record(), hotpot_record(_id="h2")])
    assert_names(data_error(lambda: load_hotpotqa(path)), path, "line 2", "JSON Lines")


def test_jsonl_bad_line_reports_line_number(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    good = json.dumps(musique_record())
    path.write_text(f"{good}\n\n{{not json\n{good}\n")
    assert_names(data_error(lambda: load_musique(path)), path, "line 3", "invalid JSON")


def test_jsonl_truncated_last_line_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    good = json.dumps(musique_record())
    path.write_text(f"{good}\n{good[:40]}")
    assert_names(data_error(lambda: load_musique(path)), path, "line 2", "invalid JSON")


def test_jsonl_line_that_is_not_an_object_names_line_and_record(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(f"{json.dumps(musique_record())}\n[1, 2]\n")
    assert_names(data_error(lambda: load_musique(path)), path, "line 2, record 1",
                 "expected a JSON object, got array")


def test_pretty_printed_json_array_given_to_jsonl_loader_is_data_error(
        tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps([musique_record()], indent=2))
    assert_names(data_error(lambda: load_musique(path)), path, "JSON array")


@pytest.mark.parametrize("loader", [load_hotpotqa, load_twowiki], ids=LOADER_IDS[:2])
def test_top_level_object_instead_of_array_is_data_error(tmp_path: Path,
                                                         loader: Loader) -> None:
    path = write_json(tmp_path / "obj.json", {"data": []})
    assert_names(data_error(lambda: loader(path)), path,
                 "top level must be a JSON array", "got object")


@pytest.mark.parametrize("loader", [load_hotpotqa, load_twowiki], ids=LOADER_IDS[:2])
def test_array_item_that_is_not_an_object_names_record(tmp_path: Path,
                                                       loader: Loader) -> None:
    path = write_json(tmp_path / "d.json", [hotpot_record(), "oops"])
    assert_names(data_error(lambda: loader(path)), path, "record 1",
                 "expected a JSON object, got string")


# ---------------------------------------------------------------- bad input: records


def write_for(loader: Loader, tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    if loader is load_musique:
        return write_jsonl(tmp_path / "d.jsonl", records)
    return write_json(tmp_path / "d.json", records)


def record_error(loader: Loader, tmp_path: Path, bad: dict[str, Any],
                 good: dict[str, Any]) -> tuple[Path, DataError]:
    """Load [good, good, bad]: the error must name record 2."""
    first, second = copy.deepcopy(good), copy.deepcopy(good)
    first_id = "id" if "id" in good else "_id"
    first[first_id], second[first_id] = "a", "b"
    path = write_for(loader, tmp_path, [first, second, bad])
    return path, data_error(lambda: loader(path))


REQUIRED: list[tuple[Loader, Callable[..., dict[str, Any]], str]] = [
    *[(load_hotpotqa, hotpot_record, key)
      for key in ("_id", "question", "answer", "context", "supporting_facts")],
    *[(load_twowiki, twowiki_record, key)
      for key in ("_id", "question", "answer", "context", "supporting_facts", "evidences")],
    *[(load_musique, musique_record, key)
      for key in ("id", "question", "answer", "paragraphs", "question_decomposition")],
]


@pytest.mark.parametrize(("loader", "make", "key"), REQUIRED,
                         ids=[f"{m.__name__}-{k}" for _, m, k in REQUIRED])
def test_missing_required_key_names_record_and_key(tmp_path: Path, loader: Loader,
                                                   make: Callable[..., dict[str, Any]],
                                                   key: str) -> None:
    bad = make()
    del bad[key]
    path, err = record_error(loader, tmp_path, bad, make())
    assert_names(err, path, f"record 2: missing key {key!r}")


WRONG_TYPES: list[tuple[Loader, Callable[..., dict[str, Any]], str, Any, str]] = [
    (load_hotpotqa, hotpot_record, "question", 42, "'question' must be a string, got number"),
    (load_hotpotqa, hotpot_record, "_id", None, "'_id' must be a string, got null"),
    (load_hotpotqa, hotpot_record, "answer", ["x"], "'answer' must be a string, got array"),
    (load_hotpotqa, hotpot_record, "level", 3, "'level' must be a string"),
    (load_hotpotqa, hotpot_record, "type", True, "'type' must be a string, got boolean"),
    (load_hotpotqa, hotpot_record, "context", {"Alpha": []},
     "'context' must be an array, got object"),
    (load_hotpotqa, hotpot_record, "context", [["Alpha", "one sentence"]],
     "'context' must be a list of [title, sentences] pairs; item 0"),
    (load_hotpotqa, hotpot_record, "context", [["Alpha"]],
     "'context' must be a list of [title, sentences] pairs; item 0 has 1 elements"),
    (load_hotpotqa, hotpot_record, "context", [[1, ["s"]]],
     "'context' must be a list of [title, sentences] pairs; item 0 has a number title"),
    (load_hotpotqa, hotpot_record, "context", ["Alpha"],
     "'context' must be a list of [title, sentences] pairs; item 0 is a string"),
    (load_hotpotqa, hotpot_record, "supporting_facts", [["Alpha", "0"]],
     "'supporting_facts' must be a list of [title, sentence_index] pairs; item 0 has a "
     "string sentence index"),
    (load_hotpotqa, hotpot_record, "supporting_facts", [["Alpha", True]],
     "'supporting_facts' must be a list of [title, sentence_index] pairs; item 0 has a "
     "boolean sentence index"),
    (load_hotpotqa, hotpot_record, "supporting_facts", ["Alpha"],
     "'supporting_facts' must be a list of [title, sentence_index] pairs; item 0 is a string"),
    (load_twowiki, twowiki_record, "evidences", [["The Ride", "director"]],
     "'evidences' must be a list of [subject, relation, object] triples; item 0"),
    (load_twowiki, twowiki_record, "evidences", [["a", "b", 3]],
     "'evidences' must be a list of [subject, relation, object] triples; item 0"),
    (load_twowiki, twowiki_record, "evidences", "none",
     "'evidences' must be an array, got string"),
    (load_musique, musique_record, "answer_aliases", "alias",
     "'answer_aliases' must be an array, got string"),
    (load_musique, musique_record, "answer_aliases", [1],
     "'answer_aliases' must be an array of strings; item 0 is a number"),
    (load_musique, musique_record, "answerable", "true",
     "'answerable' must be true or false, got string"),
    (load_musique, musique_record, "paragraphs", ["text"],
     "'paragraphs' item 0 must be an object, got string"),
    (load_musique, musique_record, "question_decomposition", {},
     "'question_decomposition' must be an array, got object"),
]


@pytest.mark.parametrize(("loader", "make", "key", "value", "expected"), WRONG_TYPES,
                         ids=[f"{m.__name__}-{k}-{i}" for i, (_, m, k, _, _)
                              in enumerate(WRONG_TYPES)])
def test_wrong_type_names_record_and_key(tmp_path: Path, loader: Loader,
                                         make: Callable[..., dict[str, Any]], key: str,
                                         value: Any, expected: str) -> None:
    path, err = record_error(loader, tmp_path, make(**{key: value}), make())
    assert_names(err, path, "record 2: " + expected)


NESTED: list[tuple[str, int, str, Any, str]] = [
    ("paragraphs", 1, "title", None, "'paragraphs' item 1: missing key 'title'"),
    ("paragraphs", 2, "idx", "2", "'paragraphs' item 2: 'idx' must be an integer, got string"),
    ("paragraphs", 0, "paragraph_text", 5,
     "'paragraphs' item 0: 'paragraph_text' must be a string, got number"),
    ("question_decomposition", 1, "question", None,
     "'question_decomposition' item 1: missing key 'question'"),
    ("question_decomposition", 0, "answer", ["Acme"],
     "'question_decomposition' item 0: 'answer' must be a string, got array"),
    ("question_decomposition", 2, "paragraph_support_idx", 1.0,
     "'question_decomposition' item 2: 'paragraph_support_idx' must be an integer or null"),
]


@pytest.mark.parametrize(("key", "item", "field", "value", "expected"), NESTED,
                         ids=[f"{k}-{f}" for k, _, f, _, _ in NESTED])
def test_musique_nested_field_error_names_record_item_and_key(
        tmp_path: Path, key: str, item: int, field: str, value: Any, expected: str) -> None:
    bad = musique_record()
    if value is None:
        del bad[key][item][field]
    else:
        bad[key][item][field] = value
    path, err = record_error(load_musique, tmp_path, bad, musique_record())
    assert_names(err, path, "line 3, record 2: " + expected)


@pytest.mark.parametrize("reference", ["#4", "#0", "#12"])
def test_musique_reference_beyond_the_hops_is_data_error(tmp_path: Path,
                                                         reference: str) -> None:
    bad = musique_record()
    bad["question_decomposition"][1]["question"] = f"What is {reference} ?"
    path, err = record_error(load_musique, tmp_path, bad, musique_record())
    assert_names(err, path, "record 2: 'question_decomposition' item 1:", repr(reference),
                 "does not exist (3 hops)")


def test_musique_support_idx_matching_no_paragraph_is_data_error(tmp_path: Path) -> None:
    bad = musique_record()
    bad["question_decomposition"][2]["paragraph_support_idx"] = 16
    path, err = record_error(load_musique, tmp_path, bad, musique_record())
    assert_names(err, path, "record 2: 'question_decomposition' item 2:",
                 "'paragraph_support_idx' 16 matches no paragraph")


def test_musique_duplicate_paragraph_idx_is_data_error(tmp_path: Path) -> None:
    bad = musique_record()
    bad["paragraphs"][3]["idx"] = 1
    path, err = record_error(load_musique, tmp_path, bad, musique_record())
    assert_names(err, path, "record 2: 'paragraphs' item 3: duplicate 'idx' 1")


@pytest.mark.parametrize(("loader", "make", "key"), [
    (load_hotpotqa, hotpot_record, "_id"), (load_twowiki, twowiki_record, "_id"),
    (load_musique, musique_record, "id")], ids=LOADER_IDS)
def test_duplicate_record_id_is_data_error(tmp_path: Path, loader: Loader,
                                           make: Callable[..., dict[str, Any]],
                                           key: str) -> None:
    path = write_for(loader, tmp_path, [make(**{key: "x"}), make(**{key: "y"}),
                                        make(**{key: "x"})])
    assert_names(data_error(lambda: loader(path)), path, "record 2: duplicate id 'x'",
                 "record 0")


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(("name", "make", "suffix", "dataset"), [
    ("hotpotqa", hotpot_record, "json", "hotpotqa"),
    ("hotpotqa_fullwiki", hotpot_record, "json", "hotpotqa"),
    ("2wiki", twowiki_record, "json", "2wiki"),
    ("twowiki", twowiki_record, "json", "2wiki"),
    ("2WikiMultihopQA", twowiki_record, "json", "2wiki"),
    ("musique", musique_record, "jsonl", "musique"),
])
def test_load_dataset_dispatches_names_and_aliases(tmp_path: Path, name: str,
                                                   make: Callable[..., dict[str, Any]],
                                                   suffix: str, dataset: str) -> None:
    path = tmp_path / f"d.{suffix}"
    if suffix == "jsonl":
        write_jsonl(path, [make()])
    else:
        write_json(path, [make()])
    loaded = load_dataset(name, path)
    assert loaded.name == dataset
    assert [e.dataset for e in loaded.examples] == [dataset]
    assert loaded.source == str(path)


def test_datasets_lists_canonical_names() -> None:
    assert dataset_names() == ["2wiki", "hotpotqa", "musique", "synthetic"]
    assert all(canonical_name(name) == name for name in dataset_names())


def test_unknown_dataset_is_config_error_naming_valid_names() -> None:
    with pytest.raises(ConfigError, match="unknown dataset 'squad'") as caught:
        load_dataset("squad", "x.json")
    for name in dataset_names():
        assert name in str(caught.value)


@pytest.mark.parametrize("name", ["hotpotqa", "2wiki", "musique"])
def test_real_dataset_without_path_is_config_error(name: str) -> None:
    with pytest.raises(ConfigError, match=f"--path is required for {name}"):
        load_dataset(name)


def test_real_dataset_rejects_unknown_options(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", [hotpot_record()])
    with pytest.raises(ConfigError, match=r"unexpected option.*hops"):
        load_dataset("hotpotqa", path, hops=3)


def test_n_keeps_the_first_records(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", [hotpot_record(_id=f"h{i}") for i in range(5)])
    loaded = load_dataset("hotpotqa", path, n=2)
    assert [e.id for e in loaded.examples] == ["h0", "h1"]
    assert loaded.info == {"records_in_file": 5, "loaded": 2}


def test_n_larger_than_file_loads_every_record(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", [hotpot_record()])
    assert len(load_dataset("hotpotqa", path, n=10).examples) == 1


def test_n_still_requires_the_whole_file_to_parse(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(f"{json.dumps(musique_record())}\n{{broken\n")
    assert_names(data_error(lambda: load_dataset("musique", path, n=1)), path, "line 2")


def test_n_validates_the_records_it_keeps(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", [hotpot_record(), {"_id": "bad"}])
    assert len(load_dataset("hotpotqa", path, n=1).examples) == 1
    assert_names(data_error(lambda: load_dataset("hotpotqa", path, n=2)), path, "record 1")


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_n_must_be_a_positive_integer(tmp_path: Path, n: Any) -> None:
    path = write_json(tmp_path / "h.json", [hotpot_record()])
    with pytest.raises(ConfigError, match="n must be a positive integer"):
        load_dataset("hotpotqa", path, n=n)


def test_synthetic_delegates_to_load_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    expected = Dataset(name="synthetic", examples=[])

    def fake_load_synthetic(**kwargs: object) -> Dataset:
        calls.append(kwargs)
        return expected

    from cuer_agent.data import synthetic

    monkeypatch.setattr(synthetic, "load_synthetic", fake_load_synthetic)
    assert load_dataset("synthetic", n=5, hops=3, seed=1, size=40) is expected
    assert load_dataset("synthetic", hops=2) is expected
    assert calls == [{"n": 5, "hops": 3, "seed": 1, "size": 40}, {"hops": 2}]


def test_synthetic_takes_no_path() -> None:
    with pytest.raises(ConfigError, match="takes no --path"):
        load_dataset("synthetic", "world.json")


def test_default_data_dir_honours_cuer_data_dir(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv("CUER_DATA_DIR", str(tmp_path))
    assert default_data_dir() == tmp_path.resolve()


def test_default_data_dir_is_shared_data_beside_the_working_dir(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CUER_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_data_dir() == (tmp_path.parent / "shared" / "data").resolve()


def test_shared_sample_path_finds_each_sample_file(tmp_path: Path) -> None:
    names = {"hotpotqa": "hotpotqa/hotpot_dev_distractor_v1.subset.json",
             "hotpotqa_fullwiki": "hotpotqa_fullwiki/hotpot_dev_fullwiki_v1.subset.json",
             "2wiki": "2wikimultihopqa/dev.subset.json",
             "twowiki": "2wikimultihopqa/dev.subset.json",
             "musique": "musique/musique_ans_v1.0_dev.subset.jsonl"}
    for relative in names.values():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("[]")
    for name, relative in names.items():
        assert shared_sample_path(name, tmp_path) == tmp_path / relative


def test_shared_sample_path_is_none_when_absent_or_synthetic(tmp_path: Path) -> None:
    assert shared_sample_path("musique", tmp_path) is None
    assert shared_sample_path("synthetic", tmp_path) is None
    with pytest.raises(ConfigError):
        shared_sample_path("squad", tmp_path)


# ---------------------------------------------------------------- shared real samples

SHARED_DATA = Path(os.environ.get("CUER_DATA_DIR")
                   or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def shared(name: str) -> Path:
    path = shared_sample_path(name, SHARED_DATA)
    if path is None:
        pytest.skip(f"../shared/data not present: no {name} sample under {SHARED_DATA}")
    return path


@pytest.mark.shared_data
@pytest.mark.parametrize(("name", "count"), [
    ("hotpotqa", 121), ("hotpotqa_fullwiki", 255), ("2wiki", 250), ("musique", 100)])
def test_shared_sample_loads_every_record(name: str, count: int) -> None:
    loaded = load_dataset(name, shared(name))
    assert len(loaded.examples) == count
    assert loaded.info == {"records_in_file": count, "loaded": count}


@pytest.mark.shared_data
def test_shared_musique_hop_histogram() -> None:
    assert load_dataset("musique", shared("musique")).hop_histogram() == {2: 73, 3: 16, 4: 11}


@pytest.mark.shared_data
def test_shared_musique_every_hop_support_title_is_a_passage() -> None:
    for example in load_dataset("musique", shared("musique")).examples:
        titles = {passage.title for passage in example.passages}
        assert all(hop.support_title in titles for hop in example.hops), example.id


@pytest.mark.shared_data
def test_shared_musique_sub_questions_have_no_unresolved_reference() -> None:
    examples = load_dataset("musique", shared("musique")).examples
    questions = [hop.question or "" for example in examples for hop in example.hops]
    assert len(questions) == 73 * 2 + 16 * 3 + 11 * 4
    assert not [question for question in questions if "#" in question]


@pytest.mark.shared_data
def test_shared_musique_qtype_is_id_prefix() -> None:
    examples = load_dataset("musique", shared("musique")).examples
    assert Counter(example.qtype for example in examples) == {
        "2hop": 73, "3hop1": 14, "3hop2": 2, "4hop1": 9, "4hop3": 2}


@pytest.mark.shared_data
def test_shared_distractor_supporting_titles_are_all_in_context() -> None:
    for example in load_dataset("hotpotqa", shared("hotpotqa")).examples:
        titles = {passage.title for passage in example.passages}
        assert set(example.supporting_titles) <= titles, example.id


@pytest.mark.shared_data
def test_shared_fullwiki_keeps_records_missing_supporting_titles() -> None:
    examples = load_dataset("hotpotqa_fullwiki", shared("hotpotqa_fullwiki")).examples
    complete = [e for e in examples
                if set(e.supporting_titles) <= {p.title for p in e.passages}]
    assert len(complete) == 68
    assert any(not e.passages for e in examples)  # fullwiki: even an empty context is valid


@pytest.mark.shared_data
def test_shared_2wiki_every_hop_has_a_supporting_title() -> None:
    for example in load_dataset("2wiki", shared("2wiki")).examples:
        assert example.hops, example.id
        assert all(hop.support_title in example.supporting_titles for hop in example.hops)


# ---------------------------------------------------------------- a file of another format

WHOWHEN_LOG: Record = {"history": [{"content": "hi", "role": "user"}], "question": "q",
                       "ground_truth": "a", "mistake_agent": "WebSurfer", "mistake_step": "1",
                       "mistake_reason": "r"}


def _written(tmp_path: Path, kind: str) -> Path:
    """A file of format `kind`, laid out as that format's files are."""
    if kind == "musique":
        return write_jsonl(tmp_path / "data.jsonl", [musique_record()])
    if kind == "whowhen":
        path = tmp_path / "1.json"
        path.write_text(json.dumps(WHOWHEN_LOG, indent=2), encoding="utf-8")
        return path
    return write_json(tmp_path / "data.json",
                      [hotpot_record() if kind == "hotpotqa" else twowiki_record()])


@pytest.mark.parametrize("kind", ["hotpotqa", "2wiki", "musique", "whowhen"])
@pytest.mark.parametrize(("loader", "suffix"), LOADERS, ids=LOADER_IDS)
def test_a_file_of_another_known_format_is_refused_in_one_line_naming_it(
        tmp_path: Path, loader: Loader, suffix: str, kind: str) -> None:
    name = LOADER_IDS[[entry[0] for entry in LOADERS].index(loader)]
    path = _written(tmp_path, kind)
    if kind == name:
        assert len(loader(path).examples) == 1
        return
    named = {"hotpotqa": "HotpotQA", "2wiki": "2WikiMultihopQA", "musique": "MuSiQue",
             "whowhen": "Who&When"}[kind]
    told = "a failure log" if kind == "whowhen" else f"--dataset {kind}"
    assert_names(data_error(lambda: loader(path)), path, named, told)

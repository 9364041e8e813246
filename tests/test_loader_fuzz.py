"""Property tests for the loaders: valid generated records round-trip into Examples, and
corrupted files either load fully and correctly or raise DataError — nothing else."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuer_agent.data import Dataset, Example, load_hotpotqa, load_musique, load_twowiki
from cuer_agent.data._io import json_type
from cuer_agent.errors import DataError

Loader = Callable[..., Dataset]
Record = dict[str, Any]

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

# Words carry no '#' and no whitespace at their ends, so the expected joined text and the
# expected resolved sub-questions are easy to state. Words and titles are drawn from small
# vocabularies (one draw each) and strategies are built once, at module level: generation
# stays cheap, and the loaders do not look inside the strings anyway.
VOCAB = ("alpha", "Beta.", "gamma,", "it's", "x-y", "café", "Жук", "straße", "naïve", "Ω",
         "(note)", "end.", "Zed", "\"quoted\"", "a/b", "€5", "tab\there", "日本")
TITLES = ("Alpha", "Beta (film)", "Gamma, Delta", "São Tomé", "The Ride (1994 film)",
          "Jan Svěrák", "Жук", "Delta", "Alpha Beta", "x")
word = st.sampled_from(VOCAB)
title = st.sampled_from(TITLES)
sentence_lists = st.lists(word, min_size=1, max_size=2)
facts_drawn = st.lists(st.tuples(st.integers(0, 4), title, st.integers(0, 5)), max_size=3)
question_parts = st.lists(st.integers(1, 4) | word, min_size=1, max_size=4)
record_counts = st.integers(1, 2)
title_lists = st.lists(title, max_size=3)
evidence_lists = st.lists(st.tuples(title, word, word).map(list), max_size=3)
paragraph_indices = st.lists(st.integers(0, 40), min_size=1, max_size=5, unique=True)
alias_lists = st.lists(word, max_size=2)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def dump(records: list[Any], jsonl: bool) -> bytes:
    if jsonl:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(records, ensure_ascii=False, indent=1) + "\n"
    return text.encode("utf-8")


def write(workdir: Path, content: bytes, jsonl: bool) -> Path:
    path = workdir / ("data.jsonl" if jsonl else "data.json")
    path.write_bytes(content)
    return path


def unique_first(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# ---------------------------------------------------------------- strategies


@st.composite
def context_and_facts(draw: st.DrawFn, leading_space: bool
                      ) -> tuple[list[Any], list[Any], list[str]]:
    """A context, supporting facts, and the expected joined passage texts.

    A fact names a context title when its drawn position falls inside the context, and
    an absent title (as in fullwiki) otherwise.
    """
    titles = draw(title_lists)
    context, texts = [], []
    for name in titles:
        sentences = draw(sentence_lists)
        shipped = [sentences[0]] + [(" " if leading_space else "") + s for s in sentences[1:]]
        context.append([name, shipped])
        texts.append(" ".join(sentences))
    facts = [[titles[pos] if pos < len(titles) else other, sentence]
             for pos, other, sentence in draw(facts_drawn)]
    return context, facts, texts


@st.composite
def hotpot_records(draw: st.DrawFn, record_id: str) -> tuple[Record, list[str]]:
    context, facts, texts = draw(context_and_facts(leading_space=True))
    record: Record = {"_id": record_id, "question": draw(word), "answer": draw(word),
                      "context": context, "supporting_facts": facts}
    if draw(st.booleans()):
        record["type"] = draw(st.sampled_from(["bridge", "comparison"]))
    if draw(st.booleans()):
        record["level"] = draw(st.sampled_from(["easy", "medium", "hard"]))
    return record, texts


@st.composite
def twowiki_records(draw: st.DrawFn, record_id: str) -> tuple[Record, list[str]]:
    context, facts, texts = draw(context_and_facts(leading_space=False))
    evidences = draw(evidence_lists)
    record: Record = {"_id": record_id, "type": "compositional", "question": draw(word),
                      "answer": draw(word), "context": context, "supporting_facts": facts,
                      "evidences": evidences, "entity_ids": "", "answer_id": None}
    return record, texts


@st.composite
def musique_records(draw: st.DrawFn, record_id: str) -> tuple[Record, list[str]]:
    """A record and its expected resolved sub-questions."""
    n_hops = draw(st.integers(1, 4))
    indices = draw(paragraph_indices)
    paragraphs = [{"idx": idx, "title": draw(title), "paragraph_text": draw(word),
                   "is_supporting": False} for idx in indices]
    answers = [draw(word) for _ in range(n_hops)]
    steps, resolved = [], []
    for hop in range(n_hops):
        parts = [(p - 1) % n_hops + 1 if isinstance(p, int) else p
                 for p in draw(question_parts)]
        steps.append({
            "id": hop, "answer": answers[hop],
            "question": " ".join(f"#{p}" if isinstance(p, int) else p for p in parts),
            "paragraph_support_idx": indices[draw(st.integers(0, 5)) % len(indices)],
        })
        resolved.append(" ".join(answers[p - 1] if isinstance(p, int) else p for p in parts))
    record: Record = {
        "id": f"{n_hops}hop__{record_id}", "paragraphs": paragraphs, "question": draw(word),
        "question_decomposition": steps, "answer": answers[-1],
        "answer_aliases": draw(alias_lists), "answerable": draw(st.booleans()),
    }
    return record, resolved


def record_lists(make: Callable[[str], st.SearchStrategy[tuple[Record, list[str]]]]
                 ) -> st.SearchStrategy[list[tuple[Record, list[str]]]]:
    """One or two records with distinct ids."""
    @st.composite
    def build(draw: st.DrawFn) -> list[tuple[Record, list[str]]]:
        return [draw(make(f"r{number}")) for number in range(draw(record_counts))]

    return build()


# ---------------------------------------------------------------- (a) round trips

Generated = list[tuple[Record, list[str]]]
"""Records, each with what the loader must make of it (passage texts, or hop questions)."""


def round_trip(workdir: Path, loader: Loader, generated: Generated,
               jsonl: bool) -> list[tuple[Example, Record, list[str]]]:
    """Write the records, load them back: one example per record, in order, each beside
    its record and what the loader must make of it."""
    records = [record for record, _ in generated]
    examples = loader(write(workdir, dump(records, jsonl), jsonl)).examples
    assert len(examples) == len(records)
    return [(example, record, made)
            for example, (record, made) in zip(examples, generated, strict=True)]


@FUZZ
@given(generated=record_lists(hotpot_records))
def test_valid_hotpotqa_records_round_trip(workdir: Path, generated: Generated) -> None:
    for example, record, texts in round_trip(workdir, load_hotpotqa, generated, False):
        assert (example.id, example.question, example.answer) == (
            record["_id"], record["question"], record["answer"])
        assert [p.text for p in example.passages] == texts
        assert [p.index for p in example.passages] == list(range(len(texts)))
        assert example.supporting_titles == unique_first(
            [t for t, _ in record["supporting_facts"]])
        assert example.n_hops == len(example.supporting_titles)
        assert example.qtype == record.get("type", "")
        assert example.meta == ({"level": record["level"]} if "level" in record else {})


@FUZZ
@given(generated=record_lists(twowiki_records))
def test_valid_twowiki_records_round_trip(workdir: Path, generated: Generated) -> None:
    for example, record, texts in round_trip(workdir, load_twowiki, generated, False):
        assert [p.text for p in example.passages] == texts
        assert [(h.relation, h.answer) for h in example.hops] == [
            (r, o) for _, r, o in record["evidences"]]
        support = set(example.supporting_titles)
        assert all(h.support_title in support if support else h.support_title is None
                   for h in example.hops)


@FUZZ
@given(generated=record_lists(musique_records))
def test_valid_musique_records_round_trip(workdir: Path, generated: Generated) -> None:
    for example, record, resolved in round_trip(workdir, load_musique, generated, True):
        by_idx = {p["idx"]: p["title"] for p in record["paragraphs"]}
        steps = record["question_decomposition"]
        assert [h.question for h in example.hops] == resolved
        assert [h.answer for h in example.hops] == [s["answer"] for s in steps]
        assert [h.support_title for h in example.hops] == [
            by_idx[s["paragraph_support_idx"]] for s in steps]
        assert example.supporting_titles == unique_first(
            [by_idx[s["paragraph_support_idx"]] for s in steps])
        assert [p.index for p in example.passages] == list(by_idx)
        assert example.n_hops == len(steps)
        assert example.aliases == tuple(record["answer_aliases"])
        assert example.meta == {"answerable": str(record["answerable"]).lower()}


# ---------------------------------------------------------------- (b) corruption

def records_of(make: Callable[[str], st.SearchStrategy[tuple[Record, list[str]]]]
               ) -> st.SearchStrategy[list[Record]]:
    return record_lists(make).map(lambda pairs: [record for record, _ in pairs])


RecordLists = st.SearchStrategy[list[Record]]
FORMATS: list[tuple[Loader, RecordLists, bool, tuple[str, ...]]] = [
    (load_hotpotqa, records_of(hotpot_records), False,
     ("_id", "question", "answer", "context", "supporting_facts")),
    (load_twowiki, records_of(twowiki_records), False,
     ("_id", "question", "answer", "context", "supporting_facts", "evidences")),
    (load_musique, records_of(musique_records), True,
     ("id", "question", "answer", "paragraphs", "question_decomposition")),
]
FORMAT_IDS = ["hotpotqa", "2wiki", "musique"]
MUSIQUE_RECORDS = FORMATS[2][1]


def load_or_error(loader: Loader, path: Path) -> Dataset | DataError:
    """Load; a DataError is returned for inspection, any other exception escapes."""
    try:
        return loader(path)
    except DataError as err:
        assert "\n" not in str(err)
        assert str(err).startswith(str(path))
        return err


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every value nested inside `value` (not `value` itself)."""
    children = (value.items() if isinstance(value, dict)
                else enumerate(value) if isinstance(value, list) else ())
    for key, child in children:
        yield (*path, key)
        yield from nodes(child, (*path, key))


def parent_of(root: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        root = root[key]
    return root


def in_every_format(test: Callable[..., None]) -> Callable[..., None]:
    """A corruption test, fuzzed, once per format of FORMATS: it takes `loader`,
    `records_strategy`, `jsonl`, `required` and hypothesis's `data`."""
    fuzzed = FUZZ(given(data=st.data())(test))
    return pytest.mark.parametrize(("loader", "records_strategy", "jsonl", "required"),
                                   FORMATS, ids=FORMAT_IDS)(fuzzed)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=5,
)


@in_every_format
def test_truncated_file_loads_a_complete_prefix_or_raises_data_error(
        workdir: Path, loader: Loader, records_strategy: RecordLists,
        jsonl: bool, required: tuple[str, ...], data: st.DataObject) -> None:
    records = data.draw(records_strategy)
    content = dump(records, jsonl)
    full = loader(write(workdir, content, jsonl)).examples
    cut = data.draw(st.integers(0, len(content) - 1))
    outcome = load_or_error(loader, write(workdir, content[:cut], jsonl))
    if isinstance(outcome, Dataset):
        if jsonl:  # a cut at a line boundary leaves a shorter valid file
            assert outcome.examples == full[: len(outcome.examples)]
        else:
            assert outcome.examples == full


@in_every_format
def test_deleted_key_loads_fully_or_raises_data_error_naming_required_key(
        workdir: Path, loader: Loader, records_strategy: RecordLists,
        jsonl: bool, required: tuple[str, ...], data: st.DataObject) -> None:
    records = data.draw(records_strategy)
    keyed = [path for path in nodes(records) if isinstance(parent_of(records, path), dict)]
    target = data.draw(st.sampled_from(keyed))
    broken = copy.deepcopy(records)
    del parent_of(broken, target)[target[-1]]
    outcome = load_or_error(loader, write(workdir, dump(broken, jsonl), jsonl))
    if len(target) == 2 and target[1] in required:
        assert isinstance(outcome, DataError)
        assert f"record {target[0]}: missing key {target[1]!r}" in str(outcome)
    elif isinstance(outcome, Dataset):
        assert len(outcome.examples) == len(records)


@in_every_format
def test_swapped_type_loads_fully_or_raises_data_error(
        workdir: Path, loader: Loader, records_strategy: RecordLists,
        jsonl: bool, required: tuple[str, ...], data: st.DataObject) -> None:
    records = data.draw(records_strategy)
    target = data.draw(st.sampled_from([(i,) for i in range(len(records))] +
                                       list(nodes(records))))
    original = parent_of(records, target)[target[-1]]
    replacement = data.draw(json_values.filter(lambda v: json_type(v) != json_type(original)))
    broken = copy.deepcopy(records)
    parent_of(broken, target)[target[-1]] = replacement
    outcome = load_or_error(loader, write(workdir, dump(broken, jsonl), jsonl))
    if len(target) == 1 or (len(target) == 2 and target[1] in required):
        assert isinstance(outcome, DataError)
        assert f"record {target[0]}" in str(outcome)
    if len(target) == 2 and target[1] in required:
        assert repr(target[1]) in str(outcome)
    if isinstance(outcome, Dataset):
        assert len(outcome.examples) == len(records)


@FUZZ
@given(data=st.data())
def test_garbage_lines_in_jsonl_raise_data_error_at_their_line(
        workdir: Path, data: st.DataObject) -> None:
    records = data.draw(MUSIQUE_RECORDS)
    lines = [json.dumps(record) for record in records]
    garbage = data.draw(st.lists(st.text(max_size=30).filter(lambda s: "\n" not in s),
                                 min_size=1, max_size=3))
    for junk in garbage:
        lines.insert(data.draw(st.integers(0, len(lines))), junk)
    path = write(workdir, ("\n".join(lines) + "\n").encode("utf-8"), True)
    outcome = load_or_error(load_musique, path)
    bad_lines = [number for number, line in enumerate(lines, start=1)
                 if line.strip() and line in garbage]
    if bad_lines:
        assert isinstance(outcome, DataError)
        assert outcome.line == bad_lines[0]
    else:
        assert isinstance(outcome, Dataset)
        assert len(outcome.examples) == len(records)


@pytest.mark.parametrize(("loader", "jsonl"), [(load_hotpotqa, False), (load_twowiki, False),
                                               (load_musique, True)], ids=FORMAT_IDS)
@FUZZ
@given(content=st.binary(max_size=120) | st.text(alphabet='[]{}":,0 \n', max_size=60).map(
    str.encode))
def test_arbitrary_bytes_raise_data_error_or_load(workdir: Path, loader: Loader, jsonl: bool,
                                                  content: bytes) -> None:
    outcome = load_or_error(loader, write(workdir, content, jsonl))
    assert isinstance(outcome, DataError | Dataset)

"""MuSiQue-Ans loader.

File format (the official ``musique_ans_v1.0_dev.jsonl``): JSON Lines, one object a line::

    {"id": "3hop1__...", "question": str, "answer": str, "answer_aliases": [str, ...],
     "answerable": bool,
     "paragraphs": [{"idx": int, "title": str, "paragraph_text": str,
                     "is_supporting": bool}, ...],
     "question_decomposition": [{"id": int, "question": str, "answer": str,
                                 "paragraph_support_idx": int}, ...]}

Later sub-questions refer to earlier hop answers as ``#1``, ``#2``, … (e.g.
``"#1 >> place of death"``, ``"Besides #1 , what other state …"``).

Mapping to `Example`:

* ``id``, ``question``, ``answer`` as shipped; ``aliases`` = ``answer_aliases`` (optional);
  ``dataset`` = ``"musique"``.
* ``passages``: one `Passage` per paragraph, ``index`` = ``idx``, ``text`` =
  ``paragraph_text``. ``idx`` values must be unique within a record.
* ``hops``: one `HopGold` per decomposition step, in order, with ``question`` = the
  sub-question with every ``#k`` replaced by hop *k*'s answer, ``support_title`` = the
  title of the paragraph whose ``idx`` is ``paragraph_support_idx`` (None when that is
  null), ``support_index`` = ``paragraph_support_idx``, ``answer`` = the hop answer.
* ``supporting_titles``: the hop support titles in hop order, without repeats.
* ``qtype``: the id prefix before ``__`` (``"2hop"``, ``"3hop1"``, …; "" without one).
* ``meta``: {"answerable": "true" | "false"} when ``answerable`` is present.

Required keys: ``id``, ``question``, ``answer``, ``paragraphs``,
``question_decomposition``; in each paragraph ``idx``, ``title``, ``paragraph_text``;
in each step ``question``, ``answer``, ``paragraph_support_idx``. A ``#k`` with *k*
outside 1…(number of hops), or a ``paragraph_support_idx`` that matches no paragraph,
is a `DataError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonObject
from cuer_agent.data._example import Dataset, Example, HopGold, Passage
from cuer_agent.data._io import (
    RawRecord,
    build_dataset,
    check_n,
    is_int,
    json_type,
    read_jsonl,
)
from cuer_agent.data._loaders import register_dataset

HOP_REFERENCE = re.compile(r"#([0-9]+)")
"""A reference to an earlier hop's answer: ``#1``, ``#2``, … (punctuation may follow)."""


@dataclass(frozen=True)
class RawHop:
    """One ``question_decomposition`` step, validated but not yet resolved."""

    question: str
    answer: str
    support_idx: int | None


Check = tuple[Callable[[Any], bool], str]
"""A value test and what it expects, for messages."""

STRING: Check = (lambda value: isinstance(value, str), "a string")
INTEGER: Check = (is_int, "an integer")
INTEGER_OR_NULL: Check = (lambda value: value is None or is_int(value), "an integer or null")


def _object_field(record: RawRecord, where: str, item: JsonObject, key: str,
                  check: Check) -> Any:
    """One field of a nested object; absent or mistyped is a DataError naming both."""
    if key not in item:
        record.fail(f"{where}: missing key {key!r}")
    value = item[key]
    test, expected = check
    if not test(value):
        record.fail(f"{where}: {key!r} must be {expected}, got {json_type(value)}")
    return value


def _objects(record: RawRecord, key: str) -> list[tuple[str, JsonObject]]:
    """The items of an array of objects, each with a 'where' label for messages."""
    labelled = []
    for position, item in enumerate(record.items(key)):
        where = f"{key!r} item {position}"
        if not isinstance(item, dict):
            record.fail(f"{where} must be an object, got {json_type(item)}")
        labelled.append((where, item))
    return labelled


def parse_paragraphs(record: RawRecord) -> tuple[Passage, ...]:
    """Passages from ``paragraphs`` (index = ``idx``), with unique ``idx`` values."""
    passages: list[Passage] = []
    seen: set[int] = set()
    for where, item in _objects(record, "paragraphs"):
        idx = _object_field(record, where, item, "idx", INTEGER)
        if idx in seen:
            record.fail(f"{where}: duplicate 'idx' {idx}")
        seen.add(idx)
        passages.append(Passage(
            title=_object_field(record, where, item, "title", STRING),
            text=_object_field(record, where, item, "paragraph_text", STRING),
            index=idx,
        ))
    return tuple(passages)


def parse_decomposition(record: RawRecord) -> list[RawHop]:
    """The ``question_decomposition`` steps in order."""
    return [
        RawHop(
            question=_object_field(record, where, item, "question", STRING),
            answer=_object_field(record, where, item, "answer", STRING),
            support_idx=_object_field(record, where, item, "paragraph_support_idx",
                                      INTEGER_OR_NULL),
        )
        for where, item in _objects(record, "question_decomposition")
    ]


def resolve_references(record: RawRecord, hop: int, question: str,
                       answers: Sequence[str]) -> str:
    """`question` with every ``#k`` replaced by ``answers[k-1]`` (hop is 1-based)."""
    def substitute(match: re.Match[str]) -> str:
        k = int(match.group(1))
        if not 1 <= k <= len(answers):
            record.fail(f"'question_decomposition' item {hop - 1}: {match.group(0)!r} refers "
                        f"to a hop that does not exist ({len(answers)} hops)")
        return answers[k - 1]

    return HOP_REFERENCE.sub(substitute, question)


def support_title(record: RawRecord, hop: int, support_idx: int | None,
                  passages: Sequence[Passage]) -> str | None:
    """Title of the paragraph whose ``idx`` is the hop's ``paragraph_support_idx``."""
    if support_idx is None:
        return None
    for passage in passages:
        if passage.index == support_idx:
            return passage.title
    record.fail(f"'question_decomposition' item {hop - 1}: 'paragraph_support_idx' "
                f"{support_idx} matches no paragraph idx")


def musique_hops(record: RawRecord, passages: Sequence[Passage]) -> tuple[HopGold, ...]:
    """Per-hop gold: resolved sub-question, support title, hop answer."""
    raw = parse_decomposition(record)
    answers = [step.answer for step in raw]
    return tuple(
        HopGold(
            question=resolve_references(record, hop, step.question, answers),
            support_title=support_title(record, hop, step.support_idx, passages),
            support_index=step.support_idx,
            answer=step.answer,
        )
        for hop, step in enumerate(raw, start=1)
    )


def question_type(example_id: str) -> str:
    """The id prefix before ``__`` (``"3hop1"``), or "" when the id has none."""
    prefix, separator, _ = example_id.partition("__")
    return prefix if separator else ""


def musique_example(record: RawRecord) -> Example:
    """One validated MuSiQue-Ans record as an `Example`."""
    example_id = record.text("id")
    passages = parse_paragraphs(record)
    hops = musique_hops(record, passages)
    titles = dict.fromkeys(hop.support_title for hop in hops if hop.support_title is not None)
    aliases = record.text_list("answer_aliases") if "answer_aliases" in record.data else []
    answerable = record.optional_bool("answerable")
    return Example(
        id=example_id,
        dataset="musique",
        question=record.text("question"),
        answer=record.text("answer"),
        aliases=tuple(aliases),
        passages=passages,
        supporting_titles=tuple(titles),
        hops=hops,
        qtype=question_type(example_id),
        meta={} if answerable is None else {"answerable": str(answerable).lower()},
    )


@register_dataset("musique", help="MuSiQue-Ans, JSON Lines", official="musique",
                  samples=(("musique", "musique/musique_ans_v1.0_dev.subset.jsonl"),))
def load_musique(path: str | Path, *, n: int | None = None) -> Dataset:
    """Load a MuSiQue-Ans JSONL file; the first `n` records if given."""
    n = check_n(n)
    source = Path(path)
    return build_dataset("musique", source, read_jsonl(source), musique_example, n)

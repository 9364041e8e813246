"""HotpotQA loader (distractor and fullwiki settings share one format and one loader).

File format (the official ``hotpot_dev_distractor_v1.json`` / ``hotpot_dev_fullwiki_v1.json``):
one JSON array of objects::

    {"_id": str, "question": str, "answer": str, "type": "bridge" | "comparison",
     "level": "easy" | "medium" | "hard",
     "context": [[title, [sentence, ...]], ...],
     "supporting_facts": [[title, sentence_index], ...]}

Mapping to `Example`:

* ``id`` = ``_id``; ``question``, ``answer`` as shipped; ``dataset`` = ``"hotpotqa"``.
* ``passages``: one `Passage` per ``context`` entry, ``index`` = its list position, ``text``
  = the sentences joined as shipped (see `join_sentences`).
* ``supporting_titles``: the unique titles of ``supporting_facts`` in first-mention order.
  In the fullwiki setting a supporting title may be missing from ``context``; that is
  valid data (an evidence-insufficient example), not an error.
* ``hops`` = () — HotpotQA has no decomposition, so ``n_hops`` falls back to the number
  of supporting titles.
* ``qtype`` = ``type`` (optional, "" when absent); ``meta`` = {"level": level} when present.

Required keys: ``_id``, ``question``, ``answer``, ``context``, ``supporting_facts``.
The context and supporting-fact helpers are shared with the 2WikiMultihopQA loader,
which uses the same layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from cuer_agent.data._example import Dataset, Example, Passage
from cuer_agent.data._io import (
    RawRecord,
    build_dataset,
    check_n,
    is_int,
    is_str_list,
    json_type,
    read_json_array,
)
from cuer_agent.data._loaders import register_dataset

CONTEXT_SHAPE = "'context' must be a list of [title, sentences] pairs"
FACTS_SHAPE = "'supporting_facts' must be a list of [title, sentence_index] pairs"


def join_sentences(sentences: Sequence[str]) -> str:
    """Join sentences as shipped.

    HotpotQA sentences after the first carry their own leading space; 2Wiki's do not.
    A sentence is appended directly when it (or the text so far) already has whitespace
    at the seam, or is empty; otherwise a single space separates it.
    """
    text = ""
    for sentence in sentences:
        seamless = not text or not sentence or sentence[0].isspace() or text[-1].isspace()
        text += sentence if seamless else " " + sentence
    return text


def _context_problem(entry: object) -> str | None:
    """Why one context entry is not a [title, [sentences]] pair (None when it is)."""
    if not isinstance(entry, list):
        return f"is a {json_type(entry)}"
    if len(entry) != 2:
        return f"has {len(entry)} elements, expected 2"
    title, sentences = entry
    if not isinstance(title, str):
        return f"has a {json_type(title)} title"
    if not is_str_list(sentences):
        return "has sentences that are not an array of strings"
    return None


def parse_context(record: RawRecord) -> tuple[Passage, ...]:
    """Passages from ``context``: index = list position, text = joined sentences."""
    passages = []
    for position, entry in enumerate(record.items("context")):
        problem = _context_problem(entry)
        if problem is not None:
            record.fail(f"{CONTEXT_SHAPE}; item {position} {problem}")
        title, sentences = entry
        passages.append(Passage(title=title, text=join_sentences(sentences), index=position))
    return tuple(passages)


def _fact_problem(fact: object) -> str | None:
    """Why one supporting fact is not a [title, sentence_index] pair (None when it is)."""
    if not isinstance(fact, list):
        return f"is a {json_type(fact)}"
    if len(fact) != 2:
        return f"has {len(fact)} elements, expected 2"
    if not isinstance(fact[0], str):
        return f"has a {json_type(fact[0])} title"
    if not is_int(fact[1]):
        return f"has a {json_type(fact[1])} sentence index"
    return None


def parse_supporting_titles(record: RawRecord) -> tuple[str, ...]:
    """Unique titles of ``supporting_facts`` in first-mention order."""
    titles: dict[str, None] = {}
    for position, fact in enumerate(record.items("supporting_facts")):
        problem = _fact_problem(fact)
        if problem is not None:
            record.fail(f"{FACTS_SHAPE}; item {position} {problem}")
        titles.setdefault(fact[0])
    return tuple(titles)


class CommonFields(TypedDict):
    """The `Example` fields HotpotQA and 2WikiMultihopQA records share."""

    id: str
    question: str
    answer: str
    passages: tuple[Passage, ...]
    qtype: str


def common_fields(record: RawRecord) -> CommonFields:
    """The `Example` fields HotpotQA and 2WikiMultihopQA records share (2Wiki keeps
    HotpotQA's layout): id, question, answer, context passages, question type."""
    return {"id": record.text("_id"), "question": record.text("question"),
            "answer": record.text("answer"), "passages": parse_context(record),
            "qtype": record.optional_text("type") or ""}


def hotpotqa_example(record: RawRecord) -> Example:
    """One validated HotpotQA record as an `Example`."""
    level = record.optional_text("level")
    fields = common_fields(record)
    return Example(**fields, dataset="hotpotqa",
                   supporting_titles=parse_supporting_titles(record),
                   meta={} if level is None else {"level": level})


@register_dataset(
    "hotpotqa", help="HotpotQA, JSON array", aliases=("hotpotqa_fullwiki",), official="hotpotqa",
    samples=(("hotpotqa", "hotpotqa/hotpot_dev_distractor_v1.subset.json"),
             ("hotpotqa_fullwiki", "hotpotqa_fullwiki/hotpot_dev_fullwiki_v1.subset.json")))
def load_hotpotqa(path: str | Path, *, n: int | None = None) -> Dataset:
    """Load a HotpotQA JSON file (distractor or fullwiki); the first `n` records if given."""
    n = check_n(n)
    source = Path(path)
    return build_dataset("hotpotqa", source, read_json_array(source), hotpotqa_example, n)

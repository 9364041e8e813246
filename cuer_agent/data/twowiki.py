"""2WikiMultihopQA loader.

File format (the official ``dev.json``): one JSON array of objects::

    {"_id": str, "type": "compositional" | "comparison" | "bridge_comparison" | "inference",
     "question": str, "answer": str,
     "context": [[title, [sentence, ...]], ...],             # as in HotpotQA
     "supporting_facts": [[title, sentence_index], ...],     # as in HotpotQA
     "evidences": [[subject, relation, object], ...],        # one triple per hop
     "entity_ids": str, "evidences_id": [...], "answer_id": ...}   # ignored

Mapping to `Example`: ``id``, ``question``, ``answer``, ``passages``, ``supporting_titles``
exactly as for HotpotQA (2Wiki sentences carry no leading space, so they are joined with
a single space); ``dataset`` = ``"2wiki"``; ``qtype`` = ``type``; and one `HopGold` per
``evidences`` triple, in order::

    HopGold(relation=relation, answer=object, support_title=<best match>, question=None)

The support title of a hop is the supporting title that best matches the triple's
*subject* (`match_support_title`): most shared content tokens (case, accents and a few
stop words ignored), then fewest title tokens the subject lacks; remaining ties — and a
subject sharing no token with any supporting title — go to the earliest title in
first-mention order. None only when the record has no supporting facts.

Required keys: ``_id``, ``question``, ``answer``, ``context``, ``supporting_facts``,
``evidences``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from cuer_agent.data._example import Dataset, Example, HopGold
from cuer_agent.data._io import (
    RawRecord,
    build_dataset,
    check_n,
    is_str_list,
    json_type,
    read_json_array,
)
from cuer_agent.data._loaders import register_dataset
from cuer_agent.data.hotpotqa import common_fields, parse_supporting_titles

EVIDENCES_SHAPE = "'evidences' must be a list of [subject, relation, object] triples"

_STOP_WORDS = frozenset({"a", "an", "and", "at", "by", "for", "in", "of", "on", "the", "to"})
_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> set[str]:
    """Content tokens: casefolded, accents stripped, stop words dropped (unless all are)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    words = set(_TOKEN.findall(plain))
    return (words - _STOP_WORDS) or words


def match_support_title(subject: str, titles: Sequence[str]) -> str | None:
    """The supporting title that best matches an evidence subject (see module docs)."""
    if not titles:
        return None
    wanted = _tokens(subject)

    def score(title: str) -> tuple[int, int]:
        have = _tokens(title)
        shared = len(wanted & have)
        return (shared, -len(have - wanted) if shared else 0)

    best = max(score(title) for title in titles)
    return next(title for title in titles if score(title) == best)


def parse_evidences(record: RawRecord) -> list[tuple[str, str, str]]:
    """The ``evidences`` triples, checked to be [subject, relation, object] strings."""
    triples = []
    for position, triple in enumerate(record.items("evidences")):
        if not is_str_list(triple) or len(triple) != 3:
            detail = (f"is a {json_type(triple)}" if not isinstance(triple, list)
                      else "is not three strings")
            record.fail(f"{EVIDENCES_SHAPE}; item {position} {detail}")
        subject, relation, obj = triple
        triples.append((subject, relation, obj))
    return triples


def twowiki_hops(triples: Sequence[tuple[str, str, str]],
                 titles: Sequence[str]) -> tuple[HopGold, ...]:
    """One `HopGold` per evidence triple, its support title matched from `titles`."""
    return tuple(
        HopGold(relation=relation, answer=obj,
                support_title=match_support_title(subject, titles))
        for subject, relation, obj in triples
    )


def twowiki_example(record: RawRecord) -> Example:
    """One validated 2WikiMultihopQA record as an `Example`."""
    titles = parse_supporting_titles(record)
    fields = common_fields(record)
    return Example(**fields, dataset="2wiki", supporting_titles=titles,
                   hops=twowiki_hops(parse_evidences(record), titles))


@register_dataset("2wiki", help="2WikiMultihopQA, JSON array",
                  aliases=("twowiki", "2wikimultihopqa"), official="hotpotqa",
                  samples=(("2wiki", "2wikimultihopqa/dev.subset.json"),))
def load_twowiki(path: str | Path, *, n: int | None = None) -> Dataset:
    """Load a 2WikiMultihopQA JSON file; the first `n` records if given."""
    n = check_n(n)
    source = Path(path)
    return build_dataset("2wiki", source, read_json_array(source), twowiki_example, n)

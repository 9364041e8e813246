"""Invisibility, measured: classifiers tell a template injection apart, not a drawn one."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuer_agent.studies.propagation.invisibility import (
    DETECTABLE,
    POSITIONAL,
    id_numbers,
    invisibility,
    items_by_fault,
)
from cuer_agent.trace import evidence_id

WORDS = ("film", "city", "river", "born", "directed", "released", "critics", "harbour",
         "market", "festival", "novel", "band", "album", "studied", "founded")


def sentence(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(5, 9)))).capitalize() + "."


def passage(rng: np.random.Generator) -> str:
    return " ".join(sentence(rng) for _ in range(int(rng.integers(3, 6))))


def item(i: str, title: str, text: str, rank: int, score: float) -> dict[str, Any]:
    return {"id": i, "title": title, "text": text, "rank": rank, "score": score}


def trace(example: str, view: list[dict[str, Any]]) -> dict[str, Any]:
    return {"example_id": example, "hops": [{"hop": 1, "retrieved": view, "attempts": []}]}


def numbered(title: str, paragraph: int) -> str:
    """An id that shows its paragraph's place, as cuer-agent's ids once did."""
    return f"{evidence_id(title, 0)[:8]}-p{paragraph}-c0"


def rows(tell: bool, n: int = 60, seed: int = 0,
         ids: Any = evidence_id) -> list[dict[str, Any]]:
    """Per example a clean view of 5 paragraphs (two about the asked entity) and a view
    where a passage about that entity was added: a template sentence (`tell`) or a
    paragraph drawn as the real ones are. `ids(title, paragraph)` names the passages;
    the added one is its title's next paragraph."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        ex = f"ex{e}"
        titles = rng.permutation(["Subject", "Subject", "Other A", "Other B", "Other C"])
        made: dict[str, int] = {}
        names = []
        for title in [*map(str, titles), "Subject"]:  # the added passage last
            made[title] = made.get(title, -1) + 1
            names.append(str(ids(f"{ex} {title}", made[title])))
        drawn = [item(names[k], str(titles[k]), passage(rng), 0, float(rng.uniform(1, 10)))
                 for k in range(5)]
        clean = sorted(drawn, key=lambda ev: -ev["score"])
        clean = [{**ev, "rank": r} for r, ev in enumerate(clean, start=1)]
        text = "The premise is false." if tell else passage(rng)
        added = item(names[5], "Subject", text, 0, float(rng.uniform(1, 10)))
        # Ranked as the retriever ranks it: the added passage competes for the top 5.
        faulted = sorted([*clean, added], key=lambda ev: -ev["score"])[:5]
        faulted = [{**ev, "rank": r} for r, ev in enumerate(faulted, start=1)]
        out.append({"record": {"example_id": ex, "condition": "clean", "hop": 0},
                    "trace": trace(ex, clean)})
        out.append({"record": {"example_id": ex, "condition": "conflicting_evidence", "hop": 1,
                               "new_ids": [added["id"]], "target_ids": [clean[0]["id"]],
                               "provenance": {added["id"]: "world:conflicting"}},
                    "trace": trace(ex, faulted)})
    return out


def test_a_template_sentence_is_detectable_by_its_shape() -> None:
    cell = invisibility(rows(tell=True), ["conflicting_evidence"]).faults[
        "conflicting_evidence"]
    assert cell.auc is not None and cell.auc > 0.9 and cell.detectable
    assert cell.top_feature in {"sentences", "tokens", "words"}


def test_a_passage_drawn_like_the_real_ones_is_not() -> None:
    cell = invisibility(rows(tell=False), ["conflicting_evidence"]).faults[
        "conflicting_evidence"]
    assert cell.auc is not None and cell.auc <= DETECTABLE and not cell.detectable
    assert cell.ci is not None and cell.ci[0] <= 0.5 <= cell.ci[1]


def test_an_added_passage_is_set_beside_one_real_paragraph_of_its_title() -> None:
    matched = items_by_fault(rows(tell=False, n=12), ["conflicting_evidence"])[
        "conflicting_evidence"]["matched"]
    injected = [i for i in matched if i.injected]
    assert injected and 2 * len(injected) == len(matched)
    assert all(i.text.startswith("Subject") for i in matched)


def test_the_figures_are_deterministic() -> None:
    data = rows(tell=False, n=30, seed=3)
    assert invisibility(data, ["conflicting_evidence"]) == invisibility(
        data, ["conflicting_evidence"])


def test_an_added_passage_is_set_beside_the_statement_it_contradicts_when_known() -> None:
    data, expected = rows(tell=False, n=12), set()
    for row in data:
        record = row["record"]
        if record["condition"] == "clean":
            continue
        view = row["trace"]["hops"][0]["retrieved"]
        stated = next(ev for ev in view if ev["id"] not in record["new_ids"])
        record["params"] = {"contradicts": [stated["id"]]}
        if any(ev["id"] in record["new_ids"] for ev in view):
            expected.add(f"{stated['title']} {stated['text']}")
    matched = items_by_fault(data, ["conflicting_evidence"])["conflicting_evidence"]["matched"]
    assert {i.text for i in matched if not i.injected} == expected


def test_an_id_that_shows_the_next_paragraph_number_gives_the_added_passage_away() -> None:
    cell = invisibility(rows(tell=False, ids=numbered), ["conflicting_evidence"]).faults[
        "conflicting_evidence"]
    assert cell.detectable and cell.top_feature in {"id_number", "id_largest_of_title"}


def test_an_opaque_id_of_the_same_form_does_not() -> None:
    cell = invisibility(rows(tell=False, ids=evidence_id), ["conflicting_evidence"]).faults[
        "conflicting_evidence"]
    assert not cell.detectable
    assert cell.feature_auc["id_number"] == 0.5  # every id shows only its chunk number


def test_the_numbers_of_an_id_are_its_numbered_parts_not_its_hash_digits() -> None:
    assert id_numbers("3fa9c2e8-p12-c0") == [12, 0]
    assert id_numbers(evidence_id("Oslo", 12)) == [0]
    assert id_numbers("doc_7") == [7]


def test_an_item_a_withholding_surfaces_is_scored_without_its_place() -> None:
    data = rows(tell=False, n=30)
    for row in data:
        record = row["record"]
        if record["condition"] != "clean":
            record["condition"] = "withheld_evidence"
            record["provenance"] = {i: i for i in record["new_ids"]}
    cell = invisibility(data, ["withheld_evidence"]).faults["withheld_evidence"]
    assert cell.by_rank and not set(POSITIONAL) & set(cell.feature_auc)

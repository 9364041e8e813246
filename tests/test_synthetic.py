"""The synthetic multi-hop world: determinism, gold consistency, and that it needs hops."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache

import pytest

from cuer_agent.data import _synthetic_phrasing as phr
from cuer_agent.data import _synthetic_text as txt
from cuer_agent.data._example import Example
from cuer_agent.data._synthetic_former import FORMER_FACTS
from cuer_agent.data.synthetic import (
    LITERALS,
    World,
    build_world,
    load_synthetic,
    make_questions,
)
from cuer_agent.errors import ConfigError
from cuer_agent.retrieval import STOPWORDS, BM25Retriever

# Serialises a world and its questions canonically and prints the sha256; run in fresh
# interpreters with different hash seeds, it catches any dependence on set order or hash().
FINGERPRINT = """
import hashlib, json
from cuer_agent.data.synthetic import build_world, make_questions
world = build_world(seed=3, size=300)
questions = make_questions(world, 40, seed=5)
payload = {
    "nodes": [[n, sorted(d.items())] for n, d in world.graph.nodes(data=True)],
    "edges": list(world.graph.edges(keys=True)),
    "passages": [p.model_dump() for p in world.passages],
    "questions": [q.model_dump() for q in questions],
}
print(hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest())
"""


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, flags=re.IGNORECASE) is not None


@cache
def _world(size: int = 2000, seed: int = 0) -> World:
    return build_world(seed=seed, size=size)


@cache
def _mixed() -> tuple[Example, ...]:
    return tuple(make_questions(_world(), 300, seed=1))


@cache
def _three_hop() -> tuple[Example, ...]:
    return tuple(make_questions(_world(), 100, hops=3, seed=2))


def _all_questions() -> tuple[Example, ...]:
    return _mixed() + _three_hop()


def test_same_arguments_give_the_same_bytes_in_separate_processes() -> None:
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", FINGERPRINT], env=env, check=True,
                             capture_output=True, text=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_different_seeds_give_different_worlds() -> None:
    assert _world(seed=0).names != _world(seed=1).names


@pytest.mark.parametrize("hops", [1, 2, 3, 4])
def test_hops_selects_only_chains_of_that_many_hops(hops: int) -> None:
    questions = make_questions(_world(), 25, hops=hops, seed=hops)
    assert len(questions) == 25
    assert {q.qtype for q in questions} == {"chain"}
    assert {q.n_hops for q in questions} == {hops}


def test_default_mix_has_one_to_four_hop_chains_comparisons_and_yesno() -> None:
    questions = _mixed()
    assert {q.qtype for q in questions} == {"chain", "comparison", "yesno"}
    assert {q.n_hops for q in questions if q.qtype == "chain"} == {1, 2, 3, 4}
    assert {q.n_hops for q in questions if q.qtype != "chain"} == {2}
    assert {q.answer for q in questions if q.qtype == "yesno"} == {"yes", "no"}


def test_fewer_questions_are_a_prefix_of_more() -> None:
    for hops in (None, 3):
        more = make_questions(_world(), 60, hops=hops, seed=6)
        assert make_questions(_world(), 25, hops=hops, seed=6) == more[:25]


def test_question_strings_are_distinct() -> None:
    questions = make_questions(_world(), 400, seed=9)
    assert len({q.question for q in questions}) == 400


def test_example_fields_follow_the_data_model() -> None:
    for i, q in enumerate(make_questions(_world(), 30, seed=4)):
        assert q.id == f"syn-4-{i}"
        assert q.dataset == "synthetic"
        assert q.passages == ()
        assert q.supporting_titles == tuple(dict.fromkeys(h.support_title for h in q.hops))
        assert all(h.question and h.relation for h in q.hops)


def test_each_hop_fact_is_stated_in_passages_of_its_support_title() -> None:
    world = _world()
    for q in _all_questions():
        for hop in q.hops:
            subject = world.id_of(hop.support_title)
            stating = world.fact_passages(subject, hop.relation)
            assert 1 <= len(stating) <= 3
            assert all(p.title == hop.support_title and hop.answer in p.text for p in stating)
            assert world.answer(subject, hop.relation) == hop.answer


@pytest.mark.parametrize("redundancy", [1, 2, 3])
def test_a_fixed_redundancy_states_every_fact_in_that_many_passages(redundancy: int) -> None:
    world = build_world(seed=0, size=200, redundancy=redundancy)
    for e in range(world.size):
        relations = [rel for rel, _ in world.relations(e)] + [LITERALS[world.types[e]]]
        for relation in relations:
            assert world.redundancy_of(e, relation) == redundancy
        assert len(world.article(e)) >= redundancy


def test_the_default_redundancy_mixes_one_two_and_three() -> None:
    world = _world()
    counts = {world.redundancy_of(e, LITERALS[world.types[e]]) for e in range(300)}
    assert counts == {1, 2, 3}


@pytest.mark.parametrize("bad", [0, 4, True, [], [-1, 1], "often"])
def test_a_bad_redundancy_raises_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="redundancy"):
        build_world(seed=0, size=200, redundancy=bad)  # type: ignore[arg-type]


def test_a_counterfactual_paragraph_is_drawn_like_a_real_one() -> None:
    """Same title, the fact with the new value, sentences from the world's banks, and the
    article's next paragraph number; never the true value."""
    import numpy as np

    world = _world()
    real_counts = {len(p.text.split(". ")) for p in world.passages}
    for e in range(0, 600, 7):
        relation = world.relations(e)[0][0] if world.relations(e) else LITERALS[world.types[e]]
        for kind in ("conflicting", "stale"):
            value = world.counterfactual_value(e, relation, kind, np.random.default_rng(e))
            assert value != world.answer(e, relation)
            passage = world.counterfactual_paragraph(e, relation, value, kind)
            assert passage.title == world.names[e]
            assert passage.index == len(world.article(e))
            assert value in passage.text and world.answer(e, relation) not in passage.text
            assert len(passage.text.split(". ")) in real_counts


def test_a_counterfactual_paragraph_stands_where_real_ones_stating_its_fact_stand() -> None:
    """The intro among them: where an added paragraph stands in its article is no tell
    (the real passage it contradicts is as often the intro, which opens with the title)."""
    import numpy as np

    world = _world()
    opens = []
    for e in range(0, 600, 3):
        relation = world.relations(e)[0][0] if world.relations(e) else LITERALS[world.types[e]]
        value = world.counterfactual_value(e, relation, "stale", np.random.default_rng(e))
        text = world.counterfactual_paragraph(e, relation, value, "stale").text
        opens.append(text.startswith(world.names[e] + " is "))
    assert 0 < sum(opens) < len(opens)


def test_hop_gold_matches_the_graph() -> None:
    world = _world()
    for q in _all_questions():
        for hop in q.hops:
            subject = world.id_of(hop.support_title)
            if hop.relation == LITERALS[world.types[subject]]:
                value = world.graph.nodes[subject][hop.relation]
                assert hop.answer.replace(",", "") == str(value)
            else:
                obj = world.id_of(hop.answer)
                assert hop.relation in world.graph[subject][obj]


def test_chain_hops_bridge_into_the_next_hop_and_end_in_the_answer() -> None:
    for q in _all_questions():
        if q.qtype != "chain":
            continue
        for prev, nxt in zip(q.hops, q.hops[1:], strict=False):
            assert nxt.support_title == prev.answer
            assert prev.answer in nxt.question  # the sub-question names the resolved bridge
        assert q.hops[-1].answer == q.answer


def test_comparison_and_yesno_answers_follow_from_the_hop_answers() -> None:
    for q in _mixed():
        if q.qtype == "comparison":
            first, second = (int(h.answer.replace(",", "")) for h in q.hops)
            assert q.answer == str(abs(first - second))
        elif q.qtype == "yesno":
            first, second = (h.answer for h in q.hops)
            relation = q.hops[0].relation
            if relation in phr.YESNO_SAME:
                assert q.answer == ("yes" if first == second else "no")
            else:
                a, b = (int(x.replace(",", "")) for x in (first, second))
                expected = a > b if relation == "population" else a < b
                assert q.answer == ("yes" if expected else "no")


def test_multi_hop_questions_leak_neither_answer_nor_last_support_title() -> None:
    questions = _all_questions()
    for q in questions:
        assert not _mentions(q.question, q.answer), q.question
        if q.qtype == "chain" and q.n_hops >= 2:
            assert not _mentions(q.question, q.hops[-1].support_title), q.question
            assert not any(_mentions(q.question, h.answer) for h in q.hops), q.question


def test_every_hop_relation_has_two_confusers_sharing_a_name_part() -> None:
    world = _world()
    for q in _all_questions():
        for hop in q.hops:
            subject = world.id_of(hop.support_title)
            stem = world.stem(subject)
            assert _mentions(world.names[subject], stem)
            confusers = [s for s in world.siblings(subject)
                         if _mentions(world.names[s], stem)
                         and (hop.relation == LITERALS[world.types[s]]
                              or any(r == hop.relation for r, _ in world.relations(s)))]
            assert len(confusers) >= 2
            if hop.relation != LITERALS[world.types[subject]]:
                assert all(world.answer(s, hop.relation) != hop.answer for s in confusers)


def test_whole_question_retrieval_finds_the_first_hop_but_not_the_last() -> None:
    data = load_synthetic(200, hops=3, seed=7)
    assert data.corpus is not None
    retriever = BM25Retriever.from_passages(data.corpus)  # Okapi BM25, k1=1.5, b=0.75
    top5 = [{e.title for e in retriever.retrieve(q.question, 5)} for q in data.examples]
    first = sum(q.hops[0].support_title in hits
                for q, hits in zip(data.examples, top5, strict=True))
    last = sum(q.hops[-1].support_title in hits
               for q, hits in zip(data.examples, top5, strict=True))
    assert first / len(data.examples) >= 0.8
    assert last / len(data.examples) <= 0.3


def _cues(template: str) -> set[str]:
    """Content words of a template as 4-letter stems, irregular forms mapped first."""
    irregular = {"born": "birth", "wrote": "write", "written": "write"}
    words = re.findall(r"[a-z]+", re.sub(r"\{\w+\}", " ", template.lower()))
    skip = STOPWORDS | {"which", "what", "who", "where", "when", "year"}
    return {irregular.get(w, w)[:4] for w in words if w not in skip}


def test_every_question_paraphrase_shares_a_cue_with_a_fact_form() -> None:
    for relation, questions in phr.QUESTIONS.items():
        facts = txt.FACTS[relation]
        for question in questions:
            assert any(_cues(question) & _cues(fact) for fact in facts), question
        assert all("{o}" in fact for fact in facts + txt.UNCUED_FACTS.get(relation, ()))


def test_names_are_unique_and_carry_an_invented_family_word() -> None:
    world = _world()
    assert len(set(world.names)) == world.size
    pattern_words = {w.lower() for ps in txt.NAME_PATTERNS.values() for p in ps
                     for w in re.findall(r"[A-Za-z]+", p.replace("{stem}", ""))}
    stems = [world.stem(members[0]) for members in world.families]
    assert len(set(stems)) == len(stems)
    assert not {s.lower() for s in stems} & (pattern_words | STOPWORDS)
    for members in world.families:
        assert len(members) >= 3
        assert all(_mentions(world.names[m], world.stem(m)) for m in members)


def test_passages_are_articles_of_numbered_paragraphs_the_first_with_the_intro() -> None:
    world = _world()
    assert sum(len(world.article(e)) for e in range(world.size)) == len(world.passages)
    for e in range(world.size):
        article = world.article(e)
        assert [p.index for p in article] == list(range(len(article)))
        assert all(p.title == world.names[e] for p in article)
        assert article[0].text.startswith(world.names[e])


def test_capital_is_a_city_located_in_its_country() -> None:
    world = _world()
    for country in world.by_type["country"].tolist():
        capital = world.target(country, "capital")
        assert world.types[capital] == "city"
        assert world.target(capital, "located_in") == country


def test_small_world_supports_twenty_three_hop_questions() -> None:
    questions = make_questions(build_world(seed=0, size=200), 20, hops=3)
    assert len(questions) == 20


def test_asking_for_more_questions_than_the_world_has_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="ran out of distinct"):
        make_questions(_world(200), 5000, hops=4)


def test_world_below_the_minimum_size_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="at least"):
        build_world(seed=0, size=50)


@pytest.mark.parametrize("hops", [0, 5])
def test_hop_count_outside_one_to_four_raises_config_error(hops: int) -> None:
    with pytest.raises(ConfigError, match="1 to 4 hops"):
        make_questions(_world(200), 5, hops=hops)


def test_load_synthetic_returns_the_world_as_an_open_corpus() -> None:
    data = load_synthetic(20, hops=2, seed=3)
    assert data.name == "synthetic"
    assert data.source == "synthetic:seed=3,size=2000,hops=2,redundancy=mix"
    assert data.corpus is not None and len(data.corpus) > 2000  # articles of 1-4 paragraphs
    assert [q.id for q in data.examples] == [f"syn-3-{i}" for i in range(20)]
    assert data.hop_histogram() == {2: 20}


# --- the world's own disagreement: former values stated as former ------------------------

def _former_sentences(world: World, entity: int, value: str) -> list[str]:
    return [p.text for p in world.article(entity) if value in p.text]


def test_some_changeable_facts_also_state_a_former_value_with_its_year() -> None:
    w = _world()
    stated, changeable = w.former_rate()
    assert stated == len(w.former) and 0 < stated < changeable
    for (entity, relation), value in list(w.former.items())[:50]:
        assert relation in FORMER_FACTS and value != w.answer(entity, relation)
        [text] = _former_sentences(w, entity, value)[:1]
        assert re.search(r"\b(1[89]|20)\d\d\b", text)  # the year it held


def test_a_former_value_leaves_the_current_statement_in_place() -> None:
    w = _world()
    for (entity, relation), _ in list(w.former.items())[:50]:
        current = w.answer(entity, relation)
        assert all(current in p.text for p in w.fact_passages(entity, relation))


def test_a_former_population_is_smaller_than_todays() -> None:
    w = _world()
    for (entity, relation), value in w.former.items():
        if relation == "population":
            assert int(value.replace(",", "")) < int(w.answer(entity, relation).replace(",", ""))


def test_counterfactual_paragraphs_state_former_values_by_the_same_rule() -> None:
    w = _world()
    companies = w.by_type["company"].tolist()[:60]
    texts = [w.counterfactual_paragraph(e, "founded_by", w.names[companies[0]], "t").text
             for e in companies]
    marked = sum(bool(re.search(r"until \d{4}|moved its headquarters", t)) for t in texts)
    assert marked > 0  # an injected paragraph does not lack what real ones have

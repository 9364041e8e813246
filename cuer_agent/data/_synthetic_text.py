"""The text layer of the synthetic world (see `synthetic.py`): word pools, sentence
templates, and the functions that turn them into names and passages. The question
forms are in `_synthetic_phrasing.py`.

Placeholders used by the templates:

* `{s}` / `{sp}` / `{so}` — a reference to the subject entity in nominative, possessive
  and object case: its name ("Quorin Rising", "Quorin Rising's"), a description
  ("the film", "the film's") or a pronoun ("it", "its"; "he", "his", "him").
* `{o}` — the object: another entity's name, verbatim, or a formatted literal (a year,
  a population). Every fact template contains `{o}`, so the sentence stating a fact
  always contains its answer.
* `{kind}` / `{skind}` — the object's / subject's type noun ("city", "country").
* `{sib}` — the name of a family sibling (a deliberate confuser).

**A paraphrase bank.** Every relation and fact type has at least three surface forms as
a passage sentence (`FACTS`), as a question (`_synthetic_phrasing.QUESTIONS`) and, for
relations, as a bridge noun phrase (`_synthetic_phrasing.NOUN_PHRASES`); passages draw
theirs per sentence and questions per question, from the seed. Every question
paraphrase shares a cue word with at least one form of its relation in `FACTS` (the same
word, or a simple morphological variant), so a question is answerable by reading; the
forms in `UNCUED_FACTS` share none and are used now and then, so reading is not pure
keyword matching. The bank is written as natural
English, not to match any reader: the extractive reader knows general relation words
only (`cuer_agent.llm._reading.RELATION_GROUPS`), so some forms ("contains", "lies in",
"the creator of") are words it has no table entry for.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

NAME_REF_P = 0.75
"""Probability that a fact sentence names its subject (else surname/description/pronoun)."""
UNCUED_FACT_P = 0.1
"""Probability that a fact is stated in an `UNCUED_FACTS` form."""
SIBLING_FILLER_P = 0.3
"""Probability that a paragraph names one of its family siblings."""
PARAGRAPH_WEIGHTS: tuple[float, ...] = (0.3, 0.35, 0.25, 0.1)
"""Weights of an article's drawn paragraph count 1, 2, 3, 4 (an article has at least as
many paragraphs as its most redundant fact needs)."""

# --- invented words -----------------------------------------------------------------
# Syllables are onset + vowel + coda; the clusters and vowel pairs make words that read
# as names but are (almost never) real ones.
ONSETS: tuple[str, ...] = (
    "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
    "br", "dr", "gr", "kr", "tr", "th", "sk", "st", "vr", "qu", "sh", "pl", "fl",
)
ONSET_WEIGHTS: tuple[int, ...] = (4,) * 15 + (1,) * 13
"""Single consonants are more frequent than clusters, so names stay pronounceable."""
VOWELS: tuple[str, ...] = ("a", "e", "i", "o", "u", "y", "ae", "ei", "ou")
VOWEL_WEIGHTS: tuple[int, ...] = (5, 5, 4, 5, 3, 1, 1, 1, 1)
MEDIAL_CODAS: tuple[str, ...] = ("", "", "", "", "n", "r", "l", "s", "m")
FINAL_CODAS: tuple[str, ...] = (
    "", "n", "r", "l", "m", "s", "th", "x", "rn", "sk", "nd", "v", "k", "ck", "ll", "sh", "z",
)
THREE_SYLLABLE_P = 0.25

# --- names ----------------------------------------------------------------------------
# `{stem}` is the family's invented word: every member of a family carries it, so it is
# the distinctive name part the confusers share. Members take distinct patterns.
NAME_PATTERNS: dict[str, tuple[str, ...]] = {
    "film": (
        "{stem} Rising", "The {stem} Letters", "Return to {stem}", "{stem} at Dusk",
        "The Last {stem}", "Beyond {stem}", "{stem} Nights", "Shadows over {stem}",
        "The {stem} Affair", "A Winter in {stem}",
    ),
    "book": (
        "The {stem} Chronicle", "A History of {stem}", "The Ballad of {stem}",
        "Letters from {stem}", "The {stem} Inheritance", "{stem} and the Sea",
        "The Silent {stem}", "Songs of {stem}", "The {stem} Garden",
    ),
    "company": (
        "{stem} Media", "{stem} Group", "{stem} Holdings", "{stem} Works", "{stem} Industries",
        "{stem} Partners", "{stem} Labs", "{stem} Trading",
    ),
    "university": (
        "University of {stem}", "{stem} University", "{stem} Institute of Technology",
        "{stem} College", "{stem} Polytechnic", "{stem} School of Arts",
    ),
    "band": (
        "The {stem} Lights", "{stem} Parade", "The {stem} Union", "{stem} Sound",
        "{stem} Orchestra", "The {stem} Collective", "{stem} Choir",
    ),
    "album": (
        "{stem} Blue", "Songs from {stem}", "{stem} Sessions", "Nights in {stem}",
        "{stem} Avenue", "Echoes of {stem}", "Tales of {stem}", "{stem} Forever",
    ),
    "city": (
        "{stem}", "North {stem}", "Port {stem}", "{stem} Falls", "New {stem}",
        "{stem} Bay", "Fort {stem}", "East {stem}",
    ),
    "country": (
        "{stem}", "North {stem}", "{stem} Islands", "Republic of {stem}", "Greater {stem}",
        "Kingdom of {stem}", "{stem} Federation",
    ),
}
"""Name patterns per type; persons are named `{given} {stem}` (the stem is a surname)."""

TYPE_NOUN: dict[str, str] = {
    "person": "person", "film": "film", "book": "book", "company": "company",
    "university": "university", "band": "band", "album": "album", "city": "city",
    "country": "country",
}

# Non-name references to an entity: (nominative, possessive, object).
DESCRIPTIONS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "film": (("the film", "the film's", "the film"), ("it", "its", "it")),
    "book": (("the book", "the book's", "the book"), ("the novel", "the novel's", "the novel"),
             ("it", "its", "it")),
    "company": (("the company", "the company's", "the company"),
                ("the firm", "the firm's", "the firm"), ("it", "its", "it")),
    "university": (("the university", "the university's", "the university"), ("it", "its", "it")),
    "band": (("the band", "the band's", "the band"), ("the group", "the group's", "the group")),
    "album": (("the album", "the album's", "the album"), ("it", "its", "it")),
    "city": (("the city", "the city's", "the city"), ("the town", "the town's", "the town"),
             ("it", "its", "it")),
    "country": (("the country", "the country's", "the country"), ("it", "its", "it")),
}
PRONOUNS: tuple[tuple[str, str, str], ...] = (("he", "his", "him"), ("she", "her", "her"))
"""Person pronouns, one per person (persons also get surname-only references)."""

# --- passage sentences ----------------------------------------------------------------
INTROS: dict[str, tuple[str, ...]] = {
    "person": ("{name} is {a_detail}.", "{name} is a well-known {detail}.",
               "{name} is {a_detail} with a long career."),
    "film": ("{name} is {a_detail} film.", "{name} is a feature-length {detail} film."),
    "book": ("{name} is {a_detail} novel.", "{name} is a novel in the {detail} genre."),
    "company": ("{name} is {a_detail} company.", "{name} is a company active in {detail}."),
    "university": ("{name} is {a_detail} university.",
                   "{name} is {a_detail} institution of higher learning."),
    "band": ("{name} is {a_detail} band.", "{name} is {a_detail} group."),
    "album": ("{name} is {a_detail} album.", "{name} is a studio album of {detail} music."),
    "city": ("{name} is {a_detail} city.", "{name} is {a_detail} town."),
    "country": ("{name} is {a_detail} country.", "{name} is {a_detail} nation."),
}
"""`{a_detail}` is the detail with its indefinite article ("an electronic")."""
INTRO_DETAILS: dict[str, tuple[str, ...]] = {
    "person": ("painter", "architect", "historian", "engineer", "physician", "journalist",
               "chemist", "translator"),
    "film": ("drama", "comedy", "thriller", "science fiction", "documentary", "western",
             "musical", "mystery"),
    "book": ("historical", "crime", "fantasy", "romance", "adventure", "literary", "satirical"),
    "company": ("shipping", "software", "textile", "media", "food", "energy", "insurance"),
    "university": ("public", "private", "research", "technical", "small liberal arts"),
    "band": ("folk", "rock", "jazz", "electronic", "brass", "punk", "soul"),
    "album": ("folk", "rock", "jazz", "electronic", "ambient", "pop", "soul"),
    "city": ("coastal", "riverside", "mountain", "market", "industrial", "university"),
    "country": ("small", "mountainous", "coastal", "landlocked", "island", "northern"),
}
ROLE_DETAILS: dict[str, str] = {
    "directed_by": "film director", "written_by": "writer", "founded_by": "entrepreneur",
}
"""Person intro details implied by what the person did (so the intro never contradicts
the graph): a person who directed a film is introduced as a film director."""

FACTS: dict[str, tuple[str, ...]] = {
    "directed_by": ("{s} was directed by {o}.", "{sp} director was {o}.", "{o} directed {so}.",
                    "{o} served as {sp} director."),
    "produced_by": ("{s} was produced by {o}.", "{sp} production company was {o}.",
                    "{o} produced {so}."),
    "written_by": ("{s} was written by {o}.", "{sp} author is {o}.", "{o} wrote {so}.",
                   "{s} is the work of the writer {o}."),
    "published_by": ("{s} was published by {o}.", "{sp} publisher is {o}.",
                     "{o} published {so}."),
    "born_in": ("{s} was born in {o}.", "{sp} birthplace is {o}.",
                "{s} was born and raised in {o}."),
    "educated_at": ("{s} studied at {o}.", "{s} completed {sp} studies at {o}.",
                    "{s} was educated at {o}."),
    "founded_by": ("{s} was founded by {o}.", "{sp} founder is {o}.", "{o} founded {so}."),
    "headquartered_in": ("{s} is headquartered in {o}.", "{sp} headquarters are in {o}.",
                         "{s} has its headquarters in {o}."),
    "located_in": ("{s} is located in {o}.", "{s} is a {skind} located in {o}.",
                   "{s} lies in {o}."),
    "formed_in": ("{s} was formed in {o}.", "{s} formed in {o}.", "{sp} hometown is {o}."),
    "recorded_by": ("{s} was recorded by {o}.", "{o} recorded {so}.",
                    "{s} is a record by {o}."),
    "capital": ("{sp} capital is {o}.", "{s} has {o} as its capital.",
                "{o} serves as {sp} capital."),
    "birth_year": ("{s} was born in {o}.", "{s} was born in the year {o}.",
                   "{sp} year of birth is {o}."),
    "release_year": ("{s} was released in {o}.", "{s} was first released in {o}.",
                     "{s} came out in {o}.", "{s} had its release in {o}."),
    "publication_year": ("{s} was published in {o}.", "{s} was first published in {o}.",
                         "{sp} first edition was published in {o}."),
    "founding_year": ("{s} was founded in {o}.", "{s} was established in {o}.",
                      "{sp} founding year is {o}."),
    "formation_year": ("{s} was formed in {o}.", "{s} formed in {o}.",
                       "{sp} formation dates to {o}."),
    "population": ("{s} has a population of {o}.", "{sp} population is {o} people.",
                   "{s} is home to {o} people.", "{s} has {o} inhabitants."),
}
"""Fact sentences that share a cue word (or a variant of it) with a question paraphrase."""
UNCUED_FACTS: dict[str, tuple[str, ...]] = {
    "directed_by": ("{s} was made by {o}.", "{s} was helmed by {o}."),
    "produced_by": ("{s} was made under the {o} banner.",),
    "written_by": ("{s} is a novel by {o}.",),
    "published_by": ("{s} was first issued by {o}.",),
    "born_in": ("{s} is a native of {o}.", "{s} grew up in {o}."),
    "educated_at": ("{s} graduated from {o}.", "{s} attended {o}."),
    "founded_by": ("{s} was started by {o}.",),
    "headquartered_in": ("{sp} main offices are in {o}.", "{s} is based in {o}."),
    "located_in": ("{s} is situated in {o}.", "{s} is a {skind} in {o}."),
    "formed_in": ("{s} got together in {o}.", "{s} came together in {o}."),
    "recorded_by": ("{s} is an album by {o}.",),
    "capital": ("{s} is governed from {o}.",),
    "publication_year": ("{s} appeared in print in {o}.",),
    "formation_year": ("{s} has been together since {o}.",),
}
"""Fact sentences without a cue word, used now and then so that reading is not pure
keyword matching (relations missing here always use a cued form)."""

FILLERS: dict[str, tuple[str, ...]] = {
    "person": ("{s} is known for a patient and meticulous working style.",
               "{s} rarely gives interviews.", "In later years {s} took up sailing.",
               "{s} has received several regional honours.",
               "Colleagues describe {so} as generous and exacting.",
               "{sp} early work went largely unnoticed."),
    "film": ("{s} received mixed reviews from critics.", "The score was praised for its restraint.",
             "{s} runs for just under two hours.", "Critics singled out the cinematography.",
             "A restored version was screened at several festivals.",
             "{sp} ending has been debated for years."),
    "book": ("{s} has been translated into several languages.",
             "Reviewers praised its careful prose.", "{s} is divided into three parts.",
             "The cover art was painted by hand.", "{sp} final chapter surprised many readers."),
    "company": ("{s} has a large workforce.", "The firm has expanded into overseas markets.",
                "{s} is privately held.", "{sp} logo has changed several times.",
                "{s} is known for its annual staff regatta."),
    "university": ("{s} is known for its library.", "The campus includes a botanical garden.",
                   "{s} offers degrees in the sciences and humanities.",
                   "{sp} rowing club is well regarded."),
    "band": ("{s} is known for energetic concerts.", "The lineup has changed several times.",
             "Their music mixes brass with electronic textures.",
             "{s} has toured widely."),
    "album": ("{s} contains eleven tracks.", "The cover shows a lighthouse at night.",
              "Critics praised its arrangements.", "{sp} closing track is over ten minutes long."),
    "city": ("{s} is known for its covered markets.", "The old town is crossed by a narrow river.",
             "{s} hosts an annual lantern festival.", "{sp} harbour is busy all year."),
    "country": ("{s} has a temperate climate.", "The economy relies on fishing and textiles.",
                "{sp} flag shows a green and white field.", "{s} is divided into provinces."),
}
SIBLING_FILLERS: tuple[str, ...] = (
    "{s} is not to be confused with {sib}.", "{s} is often confused with {sib}.",
    "{s} should not be mistaken for {sib}.", "Despite the similar name, {s} is unrelated to {sib}.",
)
"""Filler naming a family sibling: the confuser shows up in the passage text too."""

# --- names -------------------------------------------------------------------------------

def pattern_words() -> set[str]:
    """The English words of the name patterns, lower-cased (never usable as a stem)."""
    return {w.lower() for patterns in NAME_PATTERNS.values() for p in patterns
            for w in p.replace("{stem}", " ").split() if w.isalpha()}


def _weights(w: tuple[int, ...]) -> np.ndarray:
    return np.asarray(w, dtype=np.float64) / sum(w)


def invented_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """`count` new capitalised words of 2-3 syllables; each is added to `taken` (lower
    case) and none was in it, so the words are distinct from each other and from `taken`."""
    words: list[str] = []
    while len(words) < count:
        k = count - len(words) + 64  # a few spare draws for the words already taken
        n_syl = np.where(rng.random(k) < THREE_SYLLABLE_P, 3, 2).tolist()
        on = rng.choice(len(ONSETS), size=(k, 3), p=_weights(ONSET_WEIGHTS)).tolist()
        vo = rng.choice(len(VOWELS), size=(k, 3), p=_weights(VOWEL_WEIGHTS)).tolist()
        mid = rng.integers(len(MEDIAL_CODAS), size=(k, 3)).tolist()
        fin = rng.integers(len(FINAL_CODAS), size=k).tolist()
        for i, syllables in enumerate(n_syl):
            codas = [MEDIAL_CODAS[c] for c in mid[i][:syllables - 1]] + [FINAL_CODAS[fin[i]]]
            word = "".join(ONSETS[on[i][j]] + VOWELS[vo[i][j]] + codas[j]
                           for j in range(syllables)).replace("quu", "quo")
            if word in taken:
                continue
            taken.add(word)
            words.append(word.capitalize())
            if len(words) == count:
                break
    return words


# --- passages ----------------------------------------------------------------------------

Ref = tuple[str, str, str]
"""A way to refer to an entity: (nominative, possessive, object)."""
Fact = tuple[str, str, str]
"""(relation, object text, object type noun) of one fact about a passage's subject."""


class Dice:
    """Fast draws from one seeded `random.Random`: its `choice`, `sample` and `shuffle` are
    pure Python and would dominate the build time at a million passages."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed).random

    def chance(self, p: float) -> bool:
        return self.random() < p

    def index(self, n: int) -> int:
        return min(int(self.random() * n), n - 1)

    def pick(self, seq: Sequence[T]) -> T:
        return seq[self.index(len(seq))]

    def shuffle(self, items: list[str]) -> None:
        items.sort(key=lambda _: self.random())


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def article(word: str) -> str:
    """The indefinite article of a (lower-case) word: "an electronic", "a university"."""
    return "an" if word[0] in "aeiou" and not word.startswith(("uni", "eu")) else "a"


def other_refs(t: str, surname: str, dice: Dice) -> tuple[Ref, ...]:
    """References to an entity other than its full name: surname and pronoun for a
    person, descriptions ("the film") and "it" for the rest."""
    if t == "person":
        return (surname, possessive(surname), surname), dice.pick(PRONOUNS)
    return DESCRIPTIONS[t]


def _sentence(template: str, ref: Ref, fields: dict[str, str]) -> str:
    """Fill a template (`fields` supplies the non-subject placeholders), capitalised."""
    fields["s"], fields["sp"], fields["so"] = ref
    text = template.format_map(fields)
    return text[0].upper() + text[1:] if text[0].islower() else text


def place_facts(dice: Dice, redundancies: Sequence[int]) -> tuple[int, list[tuple[int, ...]]]:
    """How an entity's article is laid out: its number of paragraphs (at least the largest
    redundancy, otherwise drawn from `PARAGRAPH_WEIGHTS`) and, per fact, the `r` distinct
    paragraphs that state it (uniformly among them)."""
    drawn = 1 + weighted_index(dice, PARAGRAPH_WEIGHTS)
    count = max(drawn, *redundancies) if redundancies else drawn
    placement = []
    for r in redundancies:
        slots = list(range(count))
        chosen = []
        for _ in range(r):
            chosen.append(slots.pop(dice.index(len(slots))))
        placement.append(tuple(sorted(chosen)))
    return count, placement


def weighted_index(dice: Dice, weights: Sequence[float]) -> int:
    """An index drawn with the given (normalised) weights."""
    u, total = dice.random() * sum(weights), 0.0
    for i, w in enumerate(weights):
        total += w
        if u < total:
            return i
    return len(weights) - 1


def render_article(dice: Dice, t: str, name: str, refs: tuple[Ref, ...], facts: list[Fact],
                   placement: list[tuple[int, ...]], count: int, siblings: list[str],
                   detail: str) -> list[str]:
    """The `count` paragraphs of an entity's article. Paragraph 0 opens with the intro;
    every paragraph states the facts placed in it (`placement[i]` for `facts[i]`, each
    sentence drawn on its own: subject reference, cued or uncued form), one or two
    fillers (distinct within the article while the type has enough) and, now and then,
    a sibling mention; the body of each paragraph is in random order."""
    name_ref: Ref = (name, possessive(name), name)
    fields = {"skind": TYPE_NOUN[t], "kind": "", "o": "", "sib": ""}
    fillers = FILLERS[t]
    unused = list(range(len(fillers)))
    paragraphs = []
    for j in range(count):
        body = []
        for (rel, obj, kind), where in zip(facts, placement, strict=True):
            if j not in where:
                continue
            ref = name_ref if dice.chance(NAME_REF_P) else dice.pick(refs)
            uncued = UNCUED_FACTS.get(rel, ())
            forms = uncued if uncued and dice.chance(UNCUED_FACT_P) else FACTS[rel]
            fields["o"], fields["kind"] = obj, kind
            body.append(_sentence(dice.pick(forms), ref, fields))
        for _ in range(2 if dice.chance(0.5) else 1):
            if not unused:
                unused = list(range(len(fillers)))
            i = unused.pop(dice.index(len(unused)))
            body.append(_sentence(fillers[i], name_ref if dice.chance(0.5) else dice.pick(refs),
                                  fields))
        if siblings and dice.chance(SIBLING_FILLER_P):
            fields["sib"] = dice.pick(siblings)
            body.append(_sentence(dice.pick(SIBLING_FILLERS), dice.pick(refs), fields))
        dice.shuffle(body)
        if j == 0:
            intro = dice.pick(INTROS[t]).format(name=name, detail=detail,
                                                a_detail=f"{article(detail)} {detail}")
            body.insert(0, intro)
        paragraphs.append(" ".join(body))
    return paragraphs

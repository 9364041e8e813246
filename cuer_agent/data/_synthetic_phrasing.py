"""The question forms of the synthetic world (see `synthetic.py`, `_synthetic_text.py`):
one-hop questions per relation, bridge noun phrases, comparison and yes/no templates,
and `chain_question`, which phrases a relation chain as one question.

Every question paraphrase shares a cue word with at least one form of its relation in
`_synthetic_text.FACTS` (the same word, or a simple morphological variant), so a question
is answerable by reading. Placeholders: `{s}` the subject (or the nested phrase of the
hops before), `{kind}` the object's type noun, `{a}`/`{b}` the two entities compared,
`{verb}` a year relation's verb.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

QUESTIONS: dict[str, tuple[str, ...]] = {
    "directed_by": ("Who directed {s}?", "Who was the director of {s}?",
                    "Which filmmaker directed {s}?"),
    "produced_by": ("Which company produced {s}?", "What is the production company of {s}?",
                    "Who produced {s}?"),
    "written_by": ("Who wrote {s}?", "Which author wrote {s}?", "Who was {s} written by?"),
    "published_by": ("Which company published {s}?", "Who is the publisher of {s}?",
                     "Who published {s}?"),
    "born_in": ("Where was {s} born?", "In which city was {s} born?",
                "What is the birthplace of {s}?"),
    "educated_at": ("Where did {s} study?", "At which university did {s} study?",
                    "Where was {s} educated?"),
    "founded_by": ("Who founded {s}?", "Who is the founder of {s}?", "Who was {s} founded by?"),
    "headquartered_in": ("Where is {s} headquartered?",
                         "In which city does {s} have its headquarters?",
                         "Where are the headquarters of {s}?"),
    "located_in": ("Where is {s} located?", "In which {kind} is {s} located?",
                   "What {kind} is {s} located in?"),
    "formed_in": ("Where was {s} formed?", "In which city was {s} formed?",
                  "Where did {s} form?"),
    "recorded_by": ("Which band recorded {s}?", "Who recorded {s}?",
                    "Who is the recording artist of {s}?"),
    "capital": ("What is the capital of {s}?", "Which city is the capital of {s}?",
                "Which city serves as the capital of {s}?"),
    "birth_year": ("In which year was {s} born?", "When was {s} born?",
                   "What year was {s} born in?"),
    "release_year": ("In which year was {s} released?", "When was {s} released?",
                     "In what year was {s} first released?"),
    "publication_year": ("In which year was {s} published?", "When was {s} first published?",
                         "What year was {s} published?"),
    "founding_year": ("In which year was {s} founded?", "When was {s} founded?",
                      "What is the founding year of {s}?"),
    "formation_year": ("In which year was {s} formed?", "When was {s} formed?",
                       "In what year did {s} form?"),
    "population": ("What is the population of {s}?", "How many people live in {s}?",
                   "How many inhabitants does {s} have?"),
}
"""Question paraphrases per relation, `{s}` being the subject (a name or a noun phrase)."""

NOUN_PHRASES: dict[str, tuple[str, ...]] = {
    "directed_by": ("the director of {s}", "the person who directed {s}",
                    "the filmmaker behind {s}"),
    "produced_by": ("the company that produced {s}", "the production company of {s}",
                    "the producer of {s}"),
    "written_by": ("the author of {s}", "the person who wrote {s}", "the writer of {s}"),
    "published_by": ("the publisher of {s}", "the company that published {s}",
                     "the publishing house of {s}"),
    "born_in": ("the birthplace of {s}", "the city where {s} was born",
                "the city {s} was born in"),
    "educated_at": ("the alma mater of {s}", "the university where {s} studied",
                    "the university that educated {s}"),
    "founded_by": ("the founder of {s}", "the person who founded {s}", "the creator of {s}"),
    "headquartered_in": ("the headquarters city of {s}", "the city where {s} is headquartered",
                         "the city where {s} has its headquarters"),
    "located_in": ("the {kind} that contains {s}", "the {kind} where {s} is located",
                   "the {kind} in which {s} lies"),
    "formed_in": ("the hometown of {s}", "the city where {s} was formed",
                  "the city in which {s} formed"),
    "recorded_by": ("the band that recorded {s}", "the recording artist of {s}",
                    "the band behind {s}"),
    "capital": ("the capital of {s}", "the capital city of {s}",
                "the seat of government of {s}"),
}
"""Noun phrases naming the object of a relation, used for intermediate (bridge) hops.
Forms that do not end in `{s}` are relative clauses; a question nests at most one."""

YEAR_VERBS: dict[str, str] = {
    "birth_year": "born", "release_year": "released", "publication_year": "published",
    "founding_year": "founded", "formation_year": "formed",
}
COMPARE_APART: tuple[str, ...] = (
    "How many years apart were {a} and {b} {verb}?",
    "How many years separate the years in which {a} and {b} were {verb}?",
    "By how many years do the years in which {a} and {b} were {verb} differ?",
)
YESNO_BEFORE: tuple[str, ...] = ("Was {a} {verb} before {b}?", "Was {a} {verb} earlier than {b}?",
                                 "Was {a} {verb} prior to {b}?")
YESNO_POPULATION: tuple[str, ...] = ("Does {a} have a larger population than {b}?",
                                     "Is the population of {a} larger than that of {b}?",
                                     "Does {a} have more inhabitants than {b}?")
YESNO_SAME: dict[str, tuple[str, ...]] = {
    "born_in": ("Were {a} and {b} born in the same city?", "Do {a} and {b} share a birthplace?",
                "Is the birthplace of {a} the same as that of {b}?"),
    "located_in": ("Are {a} and {b} located in the same {kind}?",
                   "Do {a} and {b} lie in the same {kind}?",
                   "Is {a} located in the same {kind} as {b}?"),
    "directed_by": ("Were {a} and {b} directed by the same person?",
                    "Do {a} and {b} share a director?",
                    "Was {a} directed by the same person as {b}?"),
    "written_by": ("Were {a} and {b} written by the same author?",
                   "Do {a} and {b} share an author?",
                   "Was {a} written by the same person as {b}?"),
    "recorded_by": ("Were {a} and {b} recorded by the same band?",
                    "Did the same band record {a} and {b}?",
                    "Was {a} recorded by the same band as {b}?"),
    "headquartered_in": ("Are {a} and {b} headquartered in the same city?",
                         "Do {a} and {b} have their headquarters in the same city?",
                         "Is {a} headquartered in the same city as {b}?"),
    "educated_at": ("Did {a} and {b} study at the same university?",
                    "Were {a} and {b} educated at the same university?",
                    "Did {a} study at the same university as {b}?"),
}
"""Yes/no questions on whether two entities share a relation's object."""



def chain_question(pick: Callable[[Sequence[str]], str], name: str,
                   hops: Sequence[tuple[str, str]]) -> str:
    """Phrase a relation chain from the named entity: `hops` are (relation, object type
    noun); every hop but the last becomes a noun phrase around the previous one, the last
    gives the question. At most one clause is centre-embedded in another ("the city where
    the director of X was born", never "the country where the city where X was born is
    located", nor "Where is the city where X was born located?")."""
    relation, kind = hops[-1]
    question = pick(QUESTIONS[relation])
    phrase, has_clause = name, False
    for depth, (inner_relation, inner_kind) in enumerate(hops[:-1]):
        forms = NOUN_PHRASES[inner_relation]
        outermost = depth == len(hops) - 2
        if has_clause or (outermost and not question.endswith("{s}?")):
            forms = tuple(f for f in forms if f.endswith("{s}"))
        form = pick(forms)
        has_clause = has_clause or not form.endswith("{s}")
        phrase = form.format(s=phrase, kind=inner_kind)
    question = question.format(s=phrase, kind=kind)
    return question[0].upper() + question[1:]

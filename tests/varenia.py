"""A hand-written world to run the agent in, for tests that must know every passage: the
director of Quorin Rising, Orlan Vessimer, was born in Kettel Harbor, a city in Varenia.

Each test module writes its own film passage (what it tests depends on how that passage
says who directed the film) and takes the director's and the city's from here."""

from __future__ import annotations

from typing import Any

from cuer_agent.data import Example, Passage

QUESTION = "In which country was the director of Quorin Rising born?"
DIRECTOR = Passage(title="Orlan Vessimer", index=1,
                   text="Orlan Vessimer is a film director. Vessimer was born in Kettel Harbor.")
CITY = Passage(title="Kettel Harbor", index=2,
               text="Kettel Harbor is a city located in the country of Varenia.")


def example_over(passages: tuple[Passage, ...], **fields: Any) -> Example:
    """The question over `passages` (answer: Varenia), with any other `fields` of it."""
    return Example(id="ex1", dataset="test", answer="Varenia", passages=passages,
                   question=QUESTION, **fields)

"""Errors a user can act on. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations

from collections.abc import Sequence


class CuerError(Exception):
    """Base class: bad input or configuration, reported without a traceback."""


class DataError(CuerError):
    """A data file is missing, malformed or has the wrong schema.

    The message always names the file and, where known, the record index or line.
    """

    def __init__(self, path: object, problem: str, *, record: int | None = None,
                 line: int | None = None) -> None:
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if record is not None:
            where += f", record {record}"
        super().__init__(f"{where}: {problem}")
        self.path = str(path)
        self.record = record
        self.line = line
        self.problem = problem


class ConfigError(CuerError):
    """An unknown name (dataset, backend, diagnoser…) or a bad option value."""


class AgentNodeError(CuerError):
    """A node of the agent under test raised: one line naming the node and the exception
    (`cuer-agent --debug …` prints the node's traceback as well)."""

    def __init__(self, message: str, node: str = "") -> None:
        super().__init__(message)
        self.node = node

    def __reduce__(self) -> tuple[object, ...]:  # crosses worker processes intact
        return (type(self), (str(self), self.node))


def node_of(exc: BaseException) -> str:
    """The LangGraph node an exception was raised in (LangGraph notes it on the
    exception: "During task with name 'llm' …"), or "" when it does not say."""
    notes: Sequence[str] = getattr(exc, "__notes__", ())
    for note in notes:
        if note.startswith("During task with name '"):
            return note.split("'", 2)[1]
    return ""

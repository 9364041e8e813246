"""A backend that records every skill request it answers (tests look at what was asked)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from cuer_agent.llm.backends import BackendReply
from cuer_agent.llm.extractive import ExtractiveBackend


@dataclass
class Recorder:
    """The extractive backend, recording every request it is asked."""

    inner: ExtractiveBackend = field(default_factory=ExtractiveBackend)
    requests: list[tuple[str, BaseModel]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def decoding(self) -> dict:
        return self.inner.decoding()

    def render(self, skill: str, request: BaseModel) -> object:
        return self.inner.render(skill, request)

    def respond(self, skill: str, request: BaseModel, rendered: object) -> BackendReply:
        self.requests.append((skill, request))
        return self.inner.respond(skill, request, rendered)

    def check(self) -> None:
        return None

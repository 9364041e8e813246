"""The consistency rules behind the backend protocol: how `consistency` asks its own rules.

On a language model, `consistency` puts each check to the backend's `check` skill. The
offline reader is no judge: on it, the diagnoser answers the same typed requests with its
own rules (`_checks`), through a `SkillClient` over `RuleChecks` that shares the run's
response cache and ledger, so the checks are cached, counted and collected like every
request. The cache key holds the rules' own `version` (a hash of their source): an edited
check is never served an old reply, and editing one leaves the reader's version — its
plan/read/answer keys and the reader a run records — unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cuer_agent.llm.backends import BackendReply, SkillClient
from cuer_agent.llm.skills import CheckRequest

from ._checks import check

RULE_MODULES = ("_checks.py", "_check_words.py", "_rule_checks.py")
"""The files whose bytes the rules' version hashes."""


def rules_version(root: Path | None = None) -> str:
    """A hash of the consistency rules (`RULE_MODULES` in `root`, by default this package:
    hashed once per process, since `consistency` makes a rule client per trace)."""
    return _hash(root) if root else _installed()


@functools.cache
def _installed() -> str:
    return _hash(Path(__file__).parent)


def _hash(root: Path) -> str:
    digest = hashlib.sha256()
    for name in RULE_MODULES:
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


class RuleChecks:
    """The `check` skill answered by rules; any other skill is not its to answer."""

    name = "consistency-rules"
    model = "rules"
    deterministic = True

    def __init__(self) -> None:
        self.version = rules_version()
        """Part of the cache key (`cuer_agent.llm.cache.cache_key`)."""

    def decoding(self) -> dict[str, str]:
        return {}  # rules take no decoding options

    def render(self, skill: str, request: BaseModel) -> Any:
        return request.model_dump(mode="json")

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        if skill != "check" or not isinstance(request, CheckRequest):
            raise ValueError(f"the consistency rules answer `check` requests only, not {skill!r}")
        reply = check(request)
        return BackendReply(text=json.dumps(reply.model_dump(mode="json"), sort_keys=True))


def rule_check_client(skills: SkillClient) -> SkillClient:
    """A client that answers `check` with the rules, sharing `skills`' cache and ledger."""
    return SkillClient(RuleChecks(), cache=skills.cache, ledger=skills.ledger)

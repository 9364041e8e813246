"""Intervention records (hidden labels) and the seeded randomness every intervention uses."""

from __future__ import annotations

import hashlib

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict  # typing's TypedDict is no pydantic field on 3.11


class TamperCertificate(TypedDict, total=False):
    """What content tampering certifies (`cuer_agent.interventions.tampering`); empty
    for every other intervention."""

    hop: int
    strategy: str
    """The rule that found the span (`tampering.STRATEGIES`)."""
    original_span: str
    new_span: str
    documents_touched: list[str]
    """Ids of the edited items, in view order."""
    replacements: int
    """Occurrences of the span replaced."""


class InterventionRecord(BaseModel):
    """What was done to which run, where, and with what certificate.

    A hidden label: stored next to the counterfactual trace in a run directory, never
    inside it, and never shown to a diagnoser.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    record_id: str
    """`<example id>/<condition>`: unique within a run."""
    example_id: str
    condition: str
    """remove, replace, duplicate, zero_retrieval, random_target, or an ablation name."""
    operator: str
    """REMOVE | REPLACE | DUPLICATE | EMPTY | NONE (the original run)."""
    hop: int = 1
    target_ids: tuple[str, ...] = ()
    target_titles: tuple[str, ...] = ()
    target_rule: str = ""
    """Which selection rule picked the target: used+gold, used, gold, top, random."""
    new_ids: tuple[str, ...] = ()
    """Ids of items the intervention put in view (replacements, duplicates)."""
    provenance: dict[str, str] = Field(default_factory=dict)
    """New id → where it came from (a source chunk id)."""
    params: dict[str, object] = Field(default_factory=dict)
    """Operator parameters: hardness, position, stage, boundary … (each intervention its
    own; written out as they are, never read back by the program)."""
    certificate: TamperCertificate = Field(default_factory=TamperCertificate)
    """Content tampering: hop, strategy, original span, new span, documents touched,
    replacements (empty for other interventions)."""
    skipped: str = ""
    """Why the intervention could not apply (empty = applied)."""


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from a sha256 of the parts — never Python's `hash()`."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def seeded_rng(*parts: object) -> np.random.Generator:
    """The generator for one (global seed, example, hop, intervention)."""
    return np.random.default_rng(stable_seed(*parts))

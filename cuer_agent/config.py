"""Study configs: one TOML file re-creates a run (`configs/*.toml`).

Sections: `[data]` (which examples), `[backend]` (which model), `[agent]` (hop budget,
k), `[cuer]` (the single-shot study — `cuer_agent.experiments.cuer.CuerConfig`),
`[propagation]` (faults, strict mode — `PropagationConfig`), `[diagnose]` (which
diagnosers, probe budget).
Unknown keys and wrong types are errors that name the file and the key. Command-line
flags given explicitly override the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuer_agent.errors import ConfigError
from cuer_agent.experiments.cuer import CuerConfig
from cuer_agent.experiments.propagation import PropagationConfig


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataSection(_Section):
    dataset: str = "synthetic"
    path: str | None = None
    """The dataset file in its original format (the user supplies it)."""
    n: int | None = Field(None, ge=1)
    hops: int | None = Field(None, ge=1, le=4)
    """Synthetic world: only H-hop questions."""
    gold_hops: tuple[int, ...] | None = None
    """Real data: keep only examples with these gold hop counts (e.g. [3] for 3-hop)."""
    seed: int = 0


class BackendSection(_Section):
    name: str = "extractive"
    model: str | None = None
    base_url: str | None = None


class AgentSection(_Section):
    hops: int = Field(3, ge=1, le=8)
    """Hop budget of the agent (synthetic world: also the questions' hop count)."""
    k: int = Field(5, ge=1)
    retries_per_hop: int = Field(1, ge=0, le=5)
    """Retries of a hop that VERIFY found unsupported (or that selected nothing), each
    with a reformulated sub-query; a budget separate from the hop budget."""


class DiagnoseSection(_Section):
    names: tuple[str, ...] = ("coverage", "coverage-gold", "llm-judge", "llm-judge-gold",
                              "frozen-hop", "frozen-hop-free", "suffix-regen",
                              "suffix-regen-free", "cuer-single-shot", "rule", "first-hop",
                              "last-hop", "chance")
    probe_budget: int = Field(3, ge=1)
    """Hops a probing diagnoser may repair (paper: 2 with BM25, 4 with dense retrieval)."""
    seed: int = 0
    min_cell: int = Field(10, ge=1)
    """Cells with fewer failed traces are flagged descriptive only."""
    bootstrap_resamples: int = Field(1000, ge=100)


class StudyConfig(_Section):
    data: DataSection = DataSection()
    backend: BackendSection = BackendSection()
    agent: AgentSection = AgentSection()
    cuer: CuerConfig = CuerConfig()
    propagation: PropagationConfig = PropagationConfig()
    diagnose: DiagnoseSection = DiagnoseSection()


def load_config(path: str | Path | None) -> StudyConfig:
    """Parse and validate a study config; None gives the defaults."""
    if path is None:
        return StudyConfig()
    source = Path(path)
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None
    return validate_config(raw, source)


def validate_config(raw: dict[str, Any], source: object = "<config>") -> StudyConfig:
    try:
        return StudyConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        problem = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise ConfigError(f"{source}: {key}: {problem}") from None


def merged(config: StudyConfig, section: str, **overrides: Any) -> Any:
    """A section with the explicitly given (not None) command-line values applied."""
    current = getattr(config, section)
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return type(current).model_validate({**current.model_dump(), **given})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"--{key.replace('_', '-')}: {first['msg']}") from None

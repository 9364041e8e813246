"""Study configs: one TOML file re-creates a run (`configs/*.toml`).

Sections: `[data]` (which examples), `[backend]` (which model), `[agent]` (hop budget,
k), `[cuer]` (the single-shot study — `cuer_agent.studies.cuer.runner.CuerConfig`),
`[propagation]` (faults, strict mode — `PropagationConfig`), `[diagnose]` (which
diagnosers, probe budget).
Unknown keys and wrong types are errors that name the file and the key. Command-line
flags given explicitly override the file.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Required, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from cuer_agent._validation import message
from cuer_agent.data import is_generated
from cuer_agent.diagnosers._base import default_diagnosers
from cuer_agent.errors import ConfigError
from cuer_agent.interventions import HARDNESS, POSITIONS, ConditionParams, get_fault
from cuer_agent.interventions._fault_types import default_faults
from cuer_agent.interventions.misleading_faults import RENAMED
from cuer_agent.interventions.persistence import Persistence
from cuer_agent.llm._remote import DEFAULT_TIMEOUT, SKILLS, omitted
from cuer_agent.llm.backends import backend_about, backend_names
from cuer_agent.roles import RoleOverrides, RoleThresholds

DEFAULT_FAULTS = default_faults()
"""Every fault that declares a `default_rank`, in that order."""


class CuerConfig(BaseModel):
    """Every threshold, weight and count of the study, with the paper's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(5, ge=1)
    questions: Literal["auto", "whole", "per_hop"] = "whole"
    """What the single-shot system is asked: each example's `whole` question over its
    own pool (the paper's system; `auto` means the same), or each hop's gold
    sub-question with its bridge resolved (`per_hop`: the system is given the gold
    decomposition — a single-hop oracle, not the paper's system)."""
    pool_size: int = Field(10, ge=2)
    """Open-corpus data (the synthetic world): passages in each question's own pool —
    one per hop stating its fact, the rest lexical confusers
    (`cuer_agent.studies._common.pools`), as in HotpotQA's distractor setting."""
    seed: int = 0
    """Seed of the interventions' randomness (random targets, easy replacements)."""
    replace_hardness: Literal["easy", "medium", "hard"] = "medium"
    duplicate_position: Literal["end", "front", "after"] = "end"
    f1_threshold: float = Field(0.8, gt=0, le=1)
    divergence_weights: tuple[float, float, float] = (0.5, 0.3, 0.2)
    """(used ids, answer change, confidence change)."""
    bootstrap_resamples: int = Field(5000, ge=100)
    bootstrap_seed: int = 42
    two_support: bool = False
    duplicate_positions: bool = False
    replace_hardness_sweep: bool = False
    weight_sensitivity: bool = False
    weight_grid_step: float = Field(0.1, gt=0, lt=0.5)
    # The published schema keeps `roles` an open table, as before it was typed: its keys
    # and values are checked below, against `RoleThresholds`.
    roles: Annotated[RoleOverrides, WithJsonSchema(
        {"additionalProperties": True, "title": "Roles", "type": "object"})] = Field(
        default_factory=RoleOverrides)
    """Overrides of `cuer_agent.roles.RoleThresholds` fields."""

    @field_validator("roles", mode="before")
    @classmethod
    def _known_role_thresholds(cls, value: object) -> object:
        # Before the fields' types: an unknown key or a bad value is named the way
        # `RoleThresholds` names it.
        if not isinstance(value, Mapping):
            return value  # not a table: pydantic says so
        known = {f.name for f in dataclasses.fields(RoleThresholds)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown role threshold(s) {unknown}; known: {sorted(known)}")
        try:
            RoleThresholds(**value)  # its own checks: positive numbers, known conditions
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    def conditions(self) -> list[tuple[str, str, ConditionParams]]:
        """(condition name, registered condition, params) in run order."""
        out: list[tuple[str, str, ConditionParams]] = [
            ("remove", "remove", {}),
            ("replace", "replace", {"hardness": self.replace_hardness}),
            ("duplicate", "duplicate", {"position": self.duplicate_position}),
            ("zero_retrieval", "zero_retrieval", {}),
            ("random_target", "random_target", {}),
        ]
        if self.duplicate_positions:
            out += [(f"duplicate_{p}", "duplicate", {"position": p})
                    for p in POSITIONS if p != self.duplicate_position]
        if self.replace_hardness_sweep:
            out += [(f"replace_{h}", "replace", {"hardness": h})
                    for h in HARDNESS if h != self.replace_hardness]
        if self.two_support:
            out += [("remove_support_1", "remove_support", {"which": 0}),
                    ("remove_support_2", "remove_support", {"which": 1}),
                    ("remove_both_supports", "remove_support", {"which": "both"})]
        return out

    def asks_per_hop(self) -> bool:
        """Is the single-shot system given the gold decomposition?"""
        return self.questions == "per_hop"


class PropagationConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    faults: tuple[str, ...] = DEFAULT_FAULTS
    fault_persistence: Persistence = "corpus"
    """How long a fault holds: `corpus` (a retrieval fault is a state of the index from
    hop h on; query drift and early termination as under `query`), `query` (whenever the
    faulted sub-query is asked again), `hop` (every retrieval at the hop: unrecoverable
    by design), `once` (a one-shot snapshot edit). See
    `cuer_agent.interventions.persistence`."""
    retries_control: bool = True
    """Run every injection a second time with the agent's retries off: the control that
    says what the retry did for recovery (only where the fork retried)."""
    hop_operators: bool = True
    """Also run REMOVE / REPLACE / DUPLICATE on each hop's target."""
    strict: bool = True
    """Inject only into clean traces whose answer was correct."""
    seed: int = 0
    recall_threshold: float = Field(0.8, gt=0, le=1)
    distractor_pool: int = Field(200, ge=1)
    """How many other examples' gold answers serve as entity distractors."""
    agentic_weights: tuple[float, float, float, float] = (0.4, 0.24, 0.16, 0.2)
    bootstrap_resamples: int = Field(1000, ge=100)
    bootstrap_seed: int = 42

    @field_validator("faults")
    @classmethod
    def _registered(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Every fault is registered (a built-in or an entry point): a config file or
        flag naming another fails here, naming its key, before any work. A renamed
        fault's old name (`false_premise`) means its new one."""
        value = tuple(dict.fromkeys(RENAMED.get(name, name) for name in value))
        for name in value:
            try:
                get_fault(name)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataSection(_Section):
    dataset: str = "synthetic"
    path: str | None = None
    """The dataset file in its original format (the user supplies it)."""
    n: int | None = Field(None, ge=1)
    hops: int | None = Field(None, ge=1, le=4)
    """Synthetic world: only H-hop questions. None: the one `gold_hops` count, else
    (several) the world's mix, else the agent's hop budget (a command that runs no agent:
    the mix), as the study commands resolve it."""
    gold_hops: tuple[int, ...] | None = None
    """Keep only examples with these gold hop counts (e.g. [3] for 3-hop; `--gold-hops`)."""
    seed: int = 0
    redundancy: int | tuple[float, ...] | Literal["mix"] = "mix"
    """Synthetic world: in how many passages each fact is stated — 1, 2 or 3, weights of
    1, 2 and 3 passages (e.g. [0.5, 0.5]), or "mix" (equal weights). Recovery from a
    withheld fact depends on it."""

    def gold_hops_flag(self) -> str | None:
        """`gold_hops` as --gold-hops spells it ("3,4"), as runs record it; None if unset."""
        return ",".join(map(str, self.gold_hops)) if self.gold_hops else None

    @field_validator("redundancy", mode="before")
    @classmethod
    def _redundancy(cls, value: Any) -> Any:
        if value == "mix":
            return value
        from cuer_agent.data.synthetic import check_redundancy
        try:
            return check_redundancy(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None


class ClientOptions(TypedDict, total=False):
    """Keyword arguments of `make_backend` (`BackendSection.client_options`); the
    decoding options only for a backend that takes them."""

    model: Required[str | None]
    base_url: Required[str | None]
    seed: int
    timeout: float
    max_tokens: dict[str, int]
    think: bool
    omit: tuple[str, ...]
    threads: int


class BackendSection(_Section):
    name: str = "extractive"
    """A registered backend (`cuer_agent.llm.backends.backend_names`)."""
    model: str | None = None
    """The server's model name; llamacpp: a .gguf path or `smollm2-135m`."""
    base_url: str | None = None
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0, exclude=True)
    """Seconds one request may take. Excluded from a run's recorded config: it decides
    how long to wait, not what comes back, so a run may resume with a longer one."""
    max_tokens: dict[str, int] = Field(default_factory=dict)
    """Output tokens per skill (`[backend.max_tokens]`, e.g. `answer = 512`); a skill not
    named gets the bound its reply schema implies (`cuer_agent.llm.bounds.token_bound`),
    before which a grammar-constrained reply always closes."""
    think: bool = False
    """Reasoning output of thinking models (Qwen3...): off unless asked for."""
    threads: int | None = Field(None, ge=1)
    """llamacpp: CPU threads (default: up to 4)."""
    omit: tuple[str, ...] = ()
    """Decoding parameters not to send, for a server that rejects them (temperature,
    seed, max_tokens, think)."""

    @field_validator("max_tokens")
    @classmethod
    def _known_skills(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(SKILLS))
        if unknown:
            raise ValueError(f"unknown skill(s) {unknown}; choose from "
                             f"{', '.join(SKILLS)}")
        if any(v < 1 for v in value.values()):
            raise ValueError("must be >= 1")
        return value

    @field_validator("omit")
    @classmethod
    def _omittable(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return omitted(value)

    def client_options(self, seed: int) -> ClientOptions:
        """Keyword arguments of `make_backend(self.name, ...)`; `seed` is the decoding
        seed (the study's). The offline reader takes none of the decoding options."""
        about = backend_about(self.name)
        options: ClientOptions = {"model": self.model, "base_url": self.base_url}
        if about.rule_based:
            return options
        if self.threads is not None and not about.threads:
            takes = [name for name in backend_names() if backend_about(name).threads]
            raise ConfigError(f"--threads applies to --backend {' or '.join(takes)}, "
                              f"not {self.name}")
        options.update({"seed": seed, "timeout": self.timeout, "max_tokens": self.max_tokens,
                        "think": self.think, "omit": self.omit})
        if self.threads is not None:
            options["threads"] = self.threads
        return options


class AgentSection(_Section):
    factory: str | None = None
    """The agent under test: ``module:factory`` or ``path/file.py:factory`` returning
    ``(graph, AgentSpec)`` (`cuer_agent.agents`); None: cuer-agent's own agent."""
    hops: int = Field(3, ge=1, le=8)
    """Hop budget of the agent (`--hops`); the synthetic world's questions have as many
    hops unless [data] says otherwise."""
    k: int = Field(5, ge=1)
    retries_per_hop: int = Field(1, ge=0, le=5)
    """Retries of a hop that VERIFY found unsupported (or that selected nothing), each
    with a reformulated sub-query; a budget separate from the hop budget."""


class DiagnoseSection(_Section):
    names: tuple[str, ...] = default_diagnosers()
    """Every diagnoser that declares a `default_rank`, in that order."""
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


DEFAULT_CONFIG = StudyConfig()
"""Every section's defaults: the offline study on the synthetic world."""


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


def validate_config(raw: Mapping[str, object], source: object = "<config>") -> StudyConfig:
    try:
        return StudyConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        problem = "unknown key" if first["type"] == "extra_forbidden" else message(first)
        raise ConfigError(f"{source}: {key}: {problem}") from None


Values = Mapping[str, Mapping[str, object]]
"""Values given for a study config: section → key → value. A key present is set (None
included: "not set" for an optional key); a key absent keeps the config's value."""


def with_values(config: StudyConfig, values: Values, *,
                flag_names: Mapping[str, str] | None = None) -> StudyConfig:
    """`config` with `values` set, validated as a whole config. A value a section refuses
    is one `ConfigError` naming it as its caller gave it: `[section] key` (the config
    file's and the API's name), or — for the CLI, which passes `flag_names` — its flag,
    `flag_names[key]` where the flag is not named after the key, else
    `--key-with-dashes`."""
    unknown = sorted(set(values) - set(StudyConfig.model_fields))
    if unknown:
        raise ConfigError(f"no such config section(s): {', '.join(unknown)}")
    # dict(), not model_dump(): a field excluded from dumps (timeout) is kept
    raw = {name: {**dict(getattr(config, name)), **values.get(name, {})}
           for name in StudyConfig.model_fields}
    try:
        return StudyConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        section = str(first["loc"][0])
        key = str(first["loc"][1]) if len(first["loc"]) > 1 else section
        name = (f"[{section}] {key}" if flag_names is None
                else flag_names.get(key, f"--{key.replace('_', '-')}"))
        raise ConfigError(f"{name}: {message(first)}") from None


def with_question_hops(config: StudyConfig, budget: int | None) -> StudyConfig:
    """The synthetic world's question hop count resolved, where [data] hops leaves it
    open: the one `gold_hops` count, else a mix (several counts, filtered), else the
    agent's hop `budget` (a study that runs no agent passes None: the world's mix). Real
    data and a [data] hops that is set are left as they are."""
    data = config.data
    if not is_generated(data.dataset) or data.hops is not None:
        return config
    hops = budget  # no gold hop counts: the agent's budget (None: the world's mix)
    if data.gold_hops:
        hops = data.gold_hops[0] if len(data.gold_hops) == 1 else None
    if hops is not None and not 1 <= hops <= 4:
        source = ("--gold-hops ([data] gold_hops)" if data.gold_hops else
                  "--hops ([agent] hops; give --gold-hops for questions of fewer hops than "
                  "the budget)")
        raise ConfigError(f"the synthetic world asks questions of 1 to 4 hops, got {hops} "
                          f"from {source}")
    return with_values(config, {"data": {"hops": hops}})

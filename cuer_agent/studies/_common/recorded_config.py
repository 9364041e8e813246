"""The one schema of a run directory's `config.json`, for every study command.

A run directory records what was asked, enough to re-create the run; `command` says
which study wrote it, and the rest of the file is that command's shape:

- `run`: the flat fields of one agent run (`dataset`, `n`, `hop_budget`, `k`, ...).
- `cuer`: `[data]`, `[backend]` and `[cuer]` as `StudyConfig` spells them.
- `propagate`: `[data]`, `[backend]`, `[propagation]` and the agent's policy
  (`hop_budget`, `retries_per_hop`, `agent`, and `k` only where it is not the default).
- `evaluate`: the whole `StudyConfig` under `study`; its `single_shot/` and `agentic/`
  subdirectories hold a `cuer` and a `propagate` config.

The writers build these records as they always did (`CuerRecord`, `PropagateRecord`:
typed dicts, so a run's bytes do not depend on the models); `open_run_dir` checks one
against its model before the run directory is made (a mismatch is a bug in the
writer), and `read_run_config` is how `replay` (and anything else) reads one back:
typed, with a wrong file named by its key path. The shapes differ
by command because changing them would change the bytes of every existing run
directory, and resume compares them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    field_validator,
)
from pydantic.config import JsonDict

from cuer_agent._json import JsonRow
from cuer_agent._validation import problem
from cuer_agent.config import (
    BackendSection,
    CuerConfig,
    DataSection,
    PropagationConfig,
    StudyConfig,
)
from cuer_agent.errors import DataError
from cuer_agent.execution import AgentConfig, Mode
from cuer_agent.run_dir import CONFIG_FILE, RunDir, read_config


def _gold_hops_as_flag(schema: JsonDict) -> None:
    """The published schema admits `gold_hops` in both written forms: a list, or the
    string --gold-hops takes ("3,4")."""
    properties = schema["properties"]
    gold_hops = properties.get("gold_hops") if isinstance(properties, dict) else None
    forms = gold_hops.get("anyOf") if isinstance(gold_hops, dict) else None
    if not isinstance(forms, list):
        raise TypeError(f"[data].gold_hops has no anyOf in its schema: {gold_hops!r}")
    forms.insert(1, {"type": "string", "pattern": "^[0-9]+(,[0-9]+)*$"})


class _Recorded(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    OPTIONAL_KEYS: ClassVar[frozenset[str]] = frozenset()
    """Keys its writer records only where they are not the default."""


class RecordedData(DataSection):
    """`[data]` as a study records it. `propagate` writes `gold_hops` as --gold-hops
    spells it ("3,4"); read back, it is the tuple `[data]` holds."""

    model_config = ConfigDict(json_schema_extra=_gold_hops_as_flag)

    @field_validator("gold_hops", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(int(part) for part in value.split(",") if part.strip())
        # a list as `cuer` writes it: a tuple here, since a before-validator hands the
        # strict check a Python list, which it would refuse as a tuple
        return tuple(value) if isinstance(value, list) else value


class RunCommandConfig(_Recorded):
    """`cuer-agent run`: one agent (or single-shot) run over a data set."""

    command: Literal["run"]
    dataset: str
    source: str
    """The data's provenance string (file digest, or the synthetic world's parameters)."""
    n: int | None
    mode: Mode
    hop_budget: int = Field(ge=1)
    k: int = Field(ge=1)
    seed: int
    retries_per_hop: int = Field(ge=0)
    agent: str | None = None
    """The `--agent` reference; None: cuer-agent's own agent."""
    backend: BackendSection
    hops: int | None = None
    """Synthetic world: the questions' hop count, recorded only where it is not the
    hop budget."""
    gold_hops: str | None = None
    """Real data: the gold hop counts kept ("3,4"), recorded only when given."""

    OPTIONAL_KEYS = frozenset({"hops", "gold_hops"})


class CuerRunConfig(_Recorded):
    """`cuer-agent cuer` (and `evaluate`'s `single_shot/`): the CUE-R study."""

    command: Literal["cuer"]
    data: RecordedData
    backend: BackendSection
    source: str
    cuer: CuerConfig


class PropagateRunConfig(_Recorded):
    """`cuer-agent propagate` (and `evaluate`'s `agentic/`): the fault-propagation study."""

    command: Literal["propagate"]
    source: str
    hop_budget: int = Field(ge=1)
    retries_per_hop: int = Field(ge=0)
    agent: str | None = None
    """The `--agent` reference; None: cuer-agent's own agent."""
    k: int = Field(AgentConfig.k, ge=1)
    """Retrieval depth; recorded only where it is not the default."""
    data: RecordedData
    backend: BackendSection
    propagation: PropagationConfig

    OPTIONAL_KEYS = frozenset({"k"})


class EvaluateRunConfig(_Recorded):
    """`cuer-agent evaluate`: the whole study config."""

    command: Literal["evaluate"]
    source: str
    study: StudyConfig


class DiagnoseRunConfig(_Recorded):
    """`cuer-agent diagnose`: any agent's traces, or failure logs, diagnosed and scored
    (written so that `load_run` reads the folder back)."""

    command: Literal["diagnose"]
    source: str
    """The traces or logs read (a file or a folder)."""
    format: str
    summary: Literal["traces", "steps"]
    """Which summary the folder holds: `TracesSummary` (hop traces) or `StepTracesSummary`
    (failure logs of multi-agent teams)."""
    diagnosers: list[str] | None
    """As asked; null: the default selection."""
    labels: str | None = None
    gold: str | None = None
    dataset: str | None = None
    hop_budget: int | None = None
    reference: str | None = None
    backend: BackendSection


AnyRunConfig = Annotated[RunCommandConfig | CuerRunConfig | PropagateRunConfig
                         | EvaluateRunConfig | DiagnoseRunConfig, Field(discriminator="command")]


class RecordedConfig(RootModel[AnyRunConfig]):
    """A run directory's `config.json`: one shape per `command`."""


COMMANDS: dict[str, type[_Recorded]] = {
    "run": RunCommandConfig, "cuer": CuerRunConfig, "propagate": PropagateRunConfig,
    "evaluate": EvaluateRunConfig, "diagnose": DiagnoseRunConfig}
"""`command` → the model of its config."""


class CuerRecord(TypedDict):
    """`config.json` of a CUE-R study as written (`CuerRunConfig` reads it back)."""

    command: Literal["cuer"]
    source: str
    data: JsonRow
    """`[data]` as JSON."""
    backend: JsonRow
    """`[backend]` as JSON."""
    cuer: JsonRow
    """`[cuer]` as JSON."""


class PropagateRecord(TypedDict):
    """`config.json` of a propagation study as written (`PropagateRunConfig` reads it
    back)."""

    command: Literal["propagate"]
    source: str
    hop_budget: int
    retries_per_hop: int
    agent: str | None
    data: JsonRow
    """`[data]` as the writer records it (`RecordedData`)."""
    backend: JsonRow
    propagation: JsonRow
    """`[propagation]` as JSON."""
    k: NotRequired[int]
    """Recorded only where it is not the default."""


def cuer_record(*, source: str, data: JsonRow, backend: JsonRow,
                cuer: CuerConfig) -> CuerRecord:
    """The `config.json` of a CUE-R study (`cuer`, and `evaluate`'s `single_shot/`)."""
    return {"command": "cuer", "source": source, "data": data, "backend": backend,
            "cuer": cuer.model_dump(mode="json")}


def propagate_record(*, source: str, hops: int, retries_per_hop: int, agent: str | None,
                     k: int, data: JsonRow, backend: JsonRow,
                     propagation: PropagationConfig) -> PropagateRecord:
    """The `config.json` of a propagation study (`propagate`, and `evaluate`'s
    `agentic/`). `k` is recorded only where it is not the default, so a run without a
    config file records what it always did; `replay` reads the default back."""
    record: PropagateRecord = {
        "command": "propagate", "source": source, "hop_budget": hops,
        "retries_per_hop": retries_per_hop, "agent": agent, "data": data,
        "backend": backend, "propagation": propagation.model_dump(mode="json")}
    if k != AgentConfig.k:
        record["k"] = k
    return record


def absent_keys(config: BaseModel, prefix: str = "") -> list[str]:
    """Key paths a config read back without, so their defaults stand in: what a writer
    always records but the file lacks (edited by hand, or written by an older version).
    Keys a writer leaves out by design (`OPTIONAL_KEYS`, fields excluded from dumps such
    as the timeout) are not listed."""
    optional: frozenset[str] = getattr(config, "OPTIONAL_KEYS", frozenset())
    absent = []
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        if name not in config.model_fields_set:
            if name not in optional and not field.exclude:
                absent.append(prefix + name)
        elif isinstance(value, BaseModel):
            absent += absent_keys(value, f"{prefix}{name}.")
    return absent


def validate_run_config(config: Any, path: object = CONFIG_FILE) -> AnyRunConfig:
    """`config` (the parsed JSON) as its command's model, strictly: a value of the wrong
    JSON type is an error, not converted. A mismatch is a `DataError` naming `path` and
    the first bad key."""
    try:
        return _strictly(config)
    except ValidationError as exc:
        raise DataError(path, f"{problem(exc, config)} (schema: config.schema.json)"
                        ) from None


def _strictly(config: Any) -> AnyRunConfig:
    """`config` through its command's own model when the command is known (so an error's
    key path does not begin with the union's tag: a `cuer` config has a `cuer` key of
    its own), as JSON and strictly; pydantic's `ValidationError` if it does not fit."""
    command = config.get("command") if isinstance(config, dict) else None
    model: Any = COMMANDS.get(command, RecordedConfig) if isinstance(command, str) else (
        RecordedConfig)
    validated = model.model_validate_json(json.dumps(config), strict=True)
    return validated.root if isinstance(validated, RecordedConfig) else validated


def read_run_config(run_dir: str | Path) -> AnyRunConfig:
    """A run directory's `config.json`, typed; missing, damaged or of no known shape →
    one error naming the file."""
    return validate_run_config(read_config(run_dir), Path(run_dir) / CONFIG_FILE)


def open_run_dir(path: Path, config: JsonRow) -> RunDir:
    """The run directory at `path`, made with `config` or resumed if it holds the same
    one. `config` is checked against its command's model first: a mismatch is a bug in
    the writer (pydantic's `ValidationError`), and nothing is made."""
    _strictly(config)
    run_dir = RunDir(path)
    run_dir.open(config)
    return run_dir

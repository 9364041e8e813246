"""The options the commands share, each declared once: their `Annotated` types, and the
option groups `DataFlags`, `AgentFlags`, `ModelFlags` and `ExecutionFlags`.

One meaning per flag: `--hops` is the agent's hop budget in every command that runs an
agent, and in `diagnose`, which reads the traces of an agent that ran with one (it exists
in no other command); `--gold-hops` keeps the questions with those gold hop
counts in every command that loads data.

One override style: a flag that a study config (`--config`) also sets defaults to None,
and None means "not given: the config file's value stands". A group's `values()` are the
values given, which `cuer_agent.config.with_values` sets and validates as a whole config
(without a file, the config's defaults are the flags' defaults, which the help states).

An option group is a frozen dataclass whose fields are options. A command takes a group
as one parameter whose default is the group (`llm: ModelFlags = MODEL_FLAGS`);
`option_groups` puts the group's options in the command's signature at that place,
where typer reads them, and hands the command the group built from their values, inside
the command's `user_errors` (so a group that refuses a value is one line, exit 2). So
`--help` lists the same options in the same order as if each were written out.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from cuer_agent.config import StudyConfig
from cuer_agent.data import dataset_help
from cuer_agent.errors import CuerError
from cuer_agent.interventions._fault_types import default_faults, fault_help
from cuer_agent.llm.backends import backend_help, concurrency_help
from cuer_agent.studies._common.session import Execution

Sections = dict[str, dict[str, object]]
"""Values a group of flags gives: config section → key → value (only those given)."""

Backend = Annotated[str | None, typer.Option(help=backend_help(default="extractive") + ".")]
Model = Annotated[str | None, typer.Option(help="Model name for ollama/openai; llamacpp: a "
                                           ".gguf file or smollm2-135m.")]
Timeout = Annotated[float | None, typer.Option(
    help="Seconds one model request may take (default 120).")]
Threads = Annotated[int | None, typer.Option(help="llamacpp: CPU threads (default: up to 4).")]
Omit = Annotated[str | None, typer.Option(
    help="Decoding parameters not to send, for a server that rejects them: comma-separated "
         "from temperature, seed, max_tokens, think.")]
BaseUrl = Annotated[str | None, typer.Option(help="Server URL (ollama host, or an "
                                             "OpenAI-compatible base URL).")]
Concurrency = Annotated[int | None, typer.Option(
    help="Model requests in flight at once — examples and the independent forks of each "
         f"(default per backend: {concurrency_help()}). Results are identical at any value.")]
ExecutorName = Annotated[str, typer.Option(
    "--executor", help="Where examples run: thread (default), process (local processes, for "
                       "CPU-bound work such as the extractive reader) or ray (a Ray cluster; "
                       "pip install 'cuer-agent\\[ray]'). Results are identical.")]
Workers = Annotated[int | None, typer.Option(
    help="Processes or Ray actors for --executor process|ray (default: the CPU count; Ray: "
         "the cluster's). Each runs concurrency/workers examples at once.")]
RayAddress = Annotated[str | None, typer.Option(
    help="Ray cluster to attach to, e.g. auto or ray://head:10001 (default: start a local "
         "Ray).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not use the response cache.")]
AgentRef = Annotated[str | None, typer.Option(
    "--agent", help="Your LangGraph agent: module:factory or path/file.py:factory, the "
                    "factory returning (graph, AgentSpec). Default: cuer-agent's own.")]
HopBudget = Annotated[int | None, typer.Option(
    "--hops", help="The agent's hop budget (default 3). The synthetic world's questions have "
                   "as many hops unless --gold-hops (or a config's \\[data] hops) says "
                   "otherwise.")]
RanHopBudget = Annotated[int | None, typer.Option(
    "--hops", min=1, help="The hop budget your agent ran with (you set it; not in the "
                          "traces): lets trace-rule tell a run that stopped before it.")]
Retries = Annotated[int | None, typer.Option(
    "--retries", help="Retries per hop when VERIFY finds a hop unsupported (default 1; "
                      "0 = the agent never retries).")]
FaultPersistence = Annotated[str | None, typer.Option(
    "--fault-persistence", help="How long an evidence fault holds: corpus (default: a state "
                                "of the index for the rest of the run), query (whenever its "
                                "sub-query is asked again), hop (every retrieval at the hop; "
                                "unrecoverable by design) or once (a one-shot state edit).")]
Faults = Annotated[str | None, typer.Option(
    help=f"Comma-separated faults (default: {', '.join(default_faults())}): {fault_help()}.")]
Strict = Annotated[bool | None, typer.Option(
    help="Inject faults only where the clean answer was correct (default: strict). "
         "--no-strict for a weak model that is rarely right.")]
Redundancy = Annotated[str | None, typer.Option(
    "--redundancy", help="Synthetic world: in how many passages each fact is stated: 1, 2, "
                         "3, mix (default) or weights of 1, 2, 3 passages (0.5,0.5).")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]
CachePath = Annotated[Path | None, typer.Option(
    help="Response cache (SQLite). Default: $CUER_CACHE, else the project's "
         "./.cuer-cache/responses.sqlite (under the current directory).")]
ConfigPath = Annotated[Path | None, typer.Option(help="Study config (TOML); flags override "
                                                 "it.")]
DatasetName = Annotated[str | None, typer.Option(
    "--dataset", help=dataset_help(default="synthetic") + ".")]
DataPath = Annotated[Path | None, typer.Option(help="Data file (original format).")]
FirstN = Annotated[int | None, typer.Option(
    "--n", help="The first N examples (default: all; evaluate: 100).")]
GoldHops = Annotated[str | None, typer.Option(
    help="Keep only the questions with these gold hop counts, e.g. 3 or 3,4 (default: "
         "all). The synthetic world asks questions of the one count given (several: its "
         "mix of questions, filtered).")]
Seed = Annotated[int | None, typer.Option(
    help="Seed of everything drawn at random: the synthetic world, decoding, faults, "
         "interventions, seeded diagnosers (default 0).")]
RunOut = Annotated[Path | None, typer.Option(
    "--out", help="Run directory, resumed if it exists (default runs/<command>-<agent>-"
                  "<dataset>-h<hops>, cuer: runs/cuer-<dataset>; <agent>: cuer-agent, or "
                  "--agent's file or module and factory, e.g. react_agent.build).")]


def gold_hop_counts(value: str | None) -> tuple[int, ...] | None:
    """--gold-hops ("3" or "3,4") as [data] gold_hops holds it; None if not given."""
    if value is None:
        return None
    try:
        counts = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise CuerError(f"--gold-hops must list hop counts >= 1, e.g. 3 or 3,4; got {value!r}")
    return counts


def redundancy_weights(value: str | None) -> object:
    """--redundancy as [data] redundancy takes it: "mix", an integer or weights."""
    if value is None or value.strip() == "mix":
        return None if value is None else "mix"
    try:
        parts = [float(p) for p in value.split(",")]
    except ValueError:
        raise CuerError(f"--redundancy must be 1, 2, 3, mix or weights like 0.5,0.5; "
                        f"got {value!r}") from None
    return int(parts[0]) if len(parts) == 1 and parts[0].is_integer() else parts


def persistence(value: str | None) -> None:
    """--fault-persistence, checked before any work."""
    from cuer_agent.interventions.persistence import PERSISTENCES

    if value is not None and value not in PERSISTENCES:
        raise CuerError(f"--fault-persistence must be one of {', '.join(PERSISTENCES)}, "
                        f"got {value!r}")


def at_least_one(option: str, value: int | None) -> None:
    """A count option (--n, --hops) given as 0 or less: one line naming it."""
    if value is not None and value < 1:
        raise CuerError(f"{option} must be >= 1, got {value}")


@dataclasses.dataclass(frozen=True)
class DataFlags:
    """--dataset --path --n --gold-hops --seed: which examples a command reads. Every
    value None is the config's (`[data]`); values out of range fail on construction."""

    dataset: DatasetName = None
    path: DataPath = None
    n: FirstN = None
    gold_hops: GoldHops = None
    seed: Seed = None

    def __post_init__(self) -> None:
        at_least_one("--n", self.n)
        gold_hop_counts(self.gold_hops)

    def values(self, study: StudyConfig) -> Sections:
        """[data] values these flags give. --gold-hops given also clears [data] hops, so
        the flag chooses the questions (`config.with_question_hops`)."""
        gold = gold_hop_counts(self.gold_hops)
        return {"data": given({"dataset": self.dataset,
                               "path": str(self.path) if self.path else None, "n": self.n,
                               "seed": self.seed, "gold_hops": gold})
                | ({"hops": None} if gold is not None else {})}


@dataclasses.dataclass(frozen=True)
class AgentFlags:
    """--hops --retries --agent: the agent a study runs and its budgets."""

    hops: HopBudget = None
    retries: Retries = None
    agent: AgentRef = None

    def __post_init__(self) -> None:
        at_least_one("--hops", self.hops)
        if self.retries is not None and self.retries < 0:
            raise CuerError(f"--retries must be >= 0, got {self.retries}")

    def values(self, study: StudyConfig) -> Sections:
        """[agent] values these flags give."""
        return {"agent": given({"hops": self.hops, "retries_per_hop": self.retries,
                                "factory": self.agent})}


@dataclasses.dataclass(frozen=True)
class ModelFlags:
    """--backend --model --base-url --timeout --threads --omit: which model answers, and
    how it is reached."""

    backend: Backend = None
    model: Model = None
    base_url: BaseUrl = None
    timeout: Timeout = None
    threads: Threads = None
    omit: Omit = None

    def values(self, study: StudyConfig) -> Sections:
        """[backend] values these flags give, over the study's own."""
        values = given({"name": self.backend, "model": self.model, "base_url": self.base_url,
                        "timeout": self.timeout, "threads": self.threads,
                        "omit": names(self.omit) if self.omit else None})
        if self.backend is not None and self.backend != study.backend.name:
            # another backend than the file's: the file's model, server and threads
            # belong to that one, not to this
            values = {"model": None, "base_url": None, "threads": None, **values}
        return {"backend": values}


@dataclasses.dataclass(frozen=True)
class FaultFlags:
    """--faults --strict --fault-persistence --redundancy: which faults a study injects,
    into which runs, how long each holds, and in how many passages the synthetic world
    states each fact (what recovery from a withheld one depends on)."""

    faults: Faults = None
    strict: Strict = None
    fault_persistence: FaultPersistence = None
    redundancy: Redundancy = None

    def __post_init__(self) -> None:
        persistence(self.fault_persistence)
        redundancy_weights(self.redundancy)

    def values(self, study: StudyConfig) -> Sections:
        """[propagation] and [data] values these flags give."""
        return {"propagation": given({"faults": names(self.faults) if self.faults else None,
                                      "strict": self.strict,
                                      "fault_persistence": self.fault_persistence}),
                "data": given({"redundancy": redundancy_weights(self.redundancy)})}


@dataclasses.dataclass(frozen=True)
class StudyFlags:
    """--config --out: the study config a command starts from, and where it writes."""

    config: ConfigPath = None
    out: RunOut = None


@dataclasses.dataclass(frozen=True)
class ExecutionFlags:
    """--cache --no-cache --progress --concurrency --executor --workers --ray-address:
    where and how fast a study runs, never what it computes."""

    cache: CachePath = None
    no_cache: NoCache = False
    progress: ShowProgress = True
    concurrency: Concurrency = None
    executor_name: ExecutorName = "thread"
    workers: Workers = None
    ray_address: RayAddress = None

    def execution(self) -> Execution:
        """These flags as the API's `Execution` (checked where a study opens)."""
        return Execution(cache=self.cache, use_cache=not self.no_cache, progress=self.progress,
                         concurrency=self.concurrency, executor=self.executor_name,
                         workers=self.workers, ray_address=self.ray_address)


DATA_FLAGS = DataFlags()
AGENT_FLAGS = AgentFlags()
MODEL_FLAGS = ModelFlags()
FAULT_FLAGS = FaultFlags()
STUDY_FLAGS = StudyFlags()
EXECUTION_FLAGS = ExecutionFlags()
_GROUPS = (DataFlags, AgentFlags, ModelFlags, FaultFlags, StudyFlags, ExecutionFlags)
ConfigFlags = DataFlags | AgentFlags | ModelFlags | FaultFlags
"""The groups that set values of a study config (`values`)."""

F = TypeVar("F", bound=Callable[..., Any])


def given(values: dict[str, object]) -> dict[str, object]:
    """The values given (not None): a flag left out keeps the config's value."""
    return {key: value for key, value in values.items() if value is not None}


def names(value: str) -> tuple[str, ...]:
    """A comma-separated option's names."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def option_groups(func: F) -> F:
    """Spread each parameter whose default is an option group into the group's options
    (same place, same order), and call `func` with the group built from their values."""
    signature = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    for param in signature.parameters.values():
        if not isinstance(param.default, _GROUPS):
            params.append(param.replace(annotation=hints.get(param.name, param.annotation)))
            continue
        group = type(param.default)
        groups[param.name] = group
        types = typing.get_type_hints(group, include_extras=True)
        params += [inspect.Parameter(field.name, param.kind, default=field.default,
                                     annotation=types[field.name])
                   for field in dataclasses.fields(group)]

    @functools.wraps(func)
    def command(**kwargs: Any) -> Any:
        for name, group in groups.items():
            kwargs[name] = group(**{field.name: kwargs.pop(field.name)
                                    for field in dataclasses.fields(group)})
        return func(**kwargs)

    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation=hints.get("return", signature.empty))
    command.__annotations__ = {param.name: param.annotation for param in params}
    return command  # type: ignore[return-value]

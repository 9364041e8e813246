"""The options several commands share: their `Annotated` types, and two option groups.

An option group is a frozen dataclass whose fields are options. A command takes a group
as one parameter whose default is the group (`llm: ModelFlags = MODEL_FLAGS`);
`option_groups` puts the group's options in the command's signature at that place,
where typer reads them, and hands the command the group built from their values. So
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

from cuer_agent.llm.backends import backend_help, concurrency_help, default_concurrency
from cuer_agent.parallel import Parallelism

Backend = Annotated[str, typer.Option(help=backend_help(default="extractive") + ".")]
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
Retries = Annotated[int | None, typer.Option(
    "--retries", help="Retries per hop when VERIFY finds a hop unsupported (default 1; "
                      "0 = the agent never retries).")]
FaultPersistence = Annotated[str | None, typer.Option(
    "--fault-persistence", help="How long an evidence fault holds: corpus (default: a state "
                                "of the index for the rest of the run), query (whenever its "
                                "sub-query is asked again), hop (every retrieval at the hop; "
                                "unrecoverable by design) or once (a one-shot state edit).")]
Redundancy = Annotated[str | None, typer.Option(
    "--redundancy", help="Synthetic world: in how many passages each fact is stated: 1, 2, "
                         "3, mix (default) or weights of 1, 2, 3 passages (0.5,0.5).")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]
CachePath = Annotated[Path | None, typer.Option(
    help="Response cache (SQLite). Default: $CUER_CACHE, else the project's "
         "./.cuer-cache/responses.sqlite (under the current directory).")]
ConfigPath = Annotated[Path | None, typer.Option(help="Study config (TOML); flags override "
                                                 "it.")]
DataPath = Annotated[Path | None, typer.Option(help="Data file (original format).")]
RunOut = Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")]
FirstN = Annotated[int | None, typer.Option(help="First N examples.")]


@dataclasses.dataclass(frozen=True)
class ModelFlags:
    """--model --base-url --timeout --threads --omit: how the backend is reached (the
    command's own --backend comes just before them)."""

    model: Model = None
    base_url: BaseUrl = None
    timeout: Timeout = None
    threads: Threads = None
    omit: Omit = None

    def engine(self, study: Any, backend: str | None) -> Any:
        """The study's [backend] section with the backend flags given applied (a command
        without --config passes the defaults, `StudyConfig()`)."""
        from cuer_agent.config import merged

        if backend is not None and backend != study.backend.name:
            # another backend than the file's: the file's model, server and threads
            # belong to that one, not to this
            study = study.model_copy(update={"backend": study.backend.model_copy(
                update={"name": backend, "model": None, "base_url": None, "threads": None})})
        return merged(study, "backend", name=backend, model=self.model,
                      base_url=self.base_url, timeout=self.timeout, threads=self.threads,
                      omit=names(self.omit) if self.omit else None)


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

    def parallelism(self, backend: str) -> Parallelism:
        """The --executor/--concurrency/--workers/--ray-address policy; bad values fail
        here, before any work."""
        concurrency = self.concurrency
        if concurrency is None:
            concurrency = default_concurrency(backend)
        return Parallelism(executor=self.executor_name, concurrency=concurrency,
                           workers=self.workers, ray_address=self.ray_address)


MODEL_FLAGS = ModelFlags()
EXECUTION_FLAGS = ExecutionFlags()
_GROUPS = (ModelFlags, ExecutionFlags)

F = TypeVar("F", bound=Callable[..., Any])


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

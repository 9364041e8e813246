"""What every study does before its own work, in one place: how it runs (`Execution`),
its backend client, examples and executor policy (`open_study`, in that order so that a
bad value fails before any work), its executors (`agent_executor`,
`single_shot_executor`), its run directory (`run_path`, `open_run`), the [backend]
section as a run records it (`recorded`, `run_meta`), and the check of a user's agent
(`check_agent`). The study entry points (`cuer_agent.studies.entry`) call these; the CLI
calls the entry points.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from cuer_agent._json import JsonRow
from cuer_agent.config import BackendSection, DataSection, StudyConfig
from cuer_agent.data import Dataset
from cuer_agent.data._select import load_study_data
from cuer_agent.execution import AgentConfig, Executor, Mode
from cuer_agent.llm.backends import SkillClient, default_concurrency
from cuer_agent.parallel import Parallelism
from cuer_agent.run_dir import RunDir


class Execution(BaseModel):
    """Where and how fast a study runs, never what it computes: its results are the same
    bytes at any of these values."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cache: Path | None = None
    """The response cache (SQLite); None: $CUER_CACHE, else ./.cuer-cache/responses.sqlite."""
    use_cache: bool = True
    """False: ask the model every time, read and write no cache."""
    progress: bool = False
    """Show a progress bar (the CLI turns it on)."""
    # Checked by `Parallelism` (its messages name the CLI's flags, one line each).
    concurrency: int | None = None
    """Model requests in flight at once; None: the backend's default."""
    executor: str = "thread"
    """thread, process (local processes) or ray."""
    workers: int | None = None
    """Processes or Ray actors (executor process or ray); None: the CPU count."""
    ray_address: str | None = None
    """The Ray cluster to attach to; None: start a local Ray."""

    def parallelism(self, backend: str) -> Parallelism:
        """The executor policy for `backend` (its default concurrency where none is set);
        a bad combination fails here, before any work."""
        concurrency = (default_concurrency(backend) if self.concurrency is None
                       else self.concurrency)
        return Parallelism(executor=self.executor, concurrency=concurrency,
                           workers=self.workers, ray_address=self.ray_address)


DEFAULT_EXECUTION = Execution()
"""Threads, the backend's default concurrency, the response cache, no progress bar."""


class OpenedStudy(NamedTuple):
    parallel: Parallelism
    skills: SkillClient
    dataset: Dataset


def open_study(engine: BackendSection, data: DataSection,
               execution: Execution) -> OpenedStudy:
    """The executor policy, the backend client (its server checked, or its model loaded)
    and the examples of [data] (narrowed to its gold hop counts)."""
    parallel = execution.parallelism(engine.name)
    skills = skill_client(engine, data.seed, execution)
    return OpenedStudy(parallel, skills, study_data(data))


def study_data(data: DataSection) -> Dataset:
    """The examples [data] names, narrowed to its gold hop counts."""
    return load_study_data(data.dataset, data.path, data.n, data.hops, data.seed,
                           data.gold_hops_flag(), data.redundancy)


def skill_client(engine: BackendSection, seed: int, execution: Execution) -> SkillClient:
    """Backend + cache + ledger from a [backend] section; checks the server (or loads the
    model) before any work starts."""
    from cuer_agent.llm.backends import make_backend
    from cuer_agent.llm.cache import ResponseCache, default_cache_path

    client_backend = make_backend(engine.name, **engine.client_options(seed))
    client_backend.check()  # type: ignore[attr-defined]
    if not execution.use_cache:
        return SkillClient(client_backend)
    return SkillClient(client_backend,
                       cache=ResponseCache(execution.cache or default_cache_path()))


RUNNING: dict[str, Path | None] = {"run_dir": None}
"""The run directory the current study writes (set by `open_run`): an interrupt can say
what was saved there (`cuer_agent.cli._app.user_errors`)."""


def run_path(command: str, dataset: str, *, agent: str | None = None,
             hops: int | None = None) -> Path:
    """A study's default run directory under runs/: `<command>-<agent>-<dataset>-h<hops>`
    for a study that runs an agent with a hop budget of `hops` (so the runs of different
    agents and budgets do not collide), else `<command>-<dataset>`."""
    if hops is None:
        return Path("runs") / f"{command}-{dataset}"
    from cuer_agent.agents import agent_label

    return Path("runs") / f"{command}-{agent_label(agent)}-{dataset}-h{hops}"


def open_run(out: Path, config: JsonRow) -> RunDir:
    """The run directory, made with `config` (checked against its command's schema) or
    resumed if it holds the same one, and noted as the study's run (`RUNNING`)."""
    from cuer_agent.studies._common.recorded_config import open_run_dir

    run_dir = open_run_dir(out, config)
    RUNNING["run_dir"] = run_dir.path
    return run_dir


def recorded(engine: BackendSection, skills: SkillClient) -> JsonRow:
    """The [backend] section as a run records it (timeout excluded), with the model the
    backend resolved (a default model name, where none was given)."""
    return {**engine.model_dump(mode="json"), "model": skills.backend.model}


def run_meta(engine: BackendSection, skills: SkillClient) -> dict[str, str]:
    """What every trace of a study records of its model: the backend and the model it
    resolved."""
    return {"backend": engine.name, "model": skills.backend.model}


def agent_executor(config: StudyConfig, skills: SkillClient,
                   mode: Mode = "agentic") -> Executor:
    """The executor of [agent] (its hop budget, k, retries and factory)."""
    agent = config.agent
    return Executor(skills, AgentConfig(mode=mode, hop_budget=agent.hops, k=agent.k,
                                        retries_per_hop=agent.retries_per_hop),
                    meta=run_meta(config.backend, skills), agent=agent.factory)


def single_shot_executor(config: StudyConfig, skills: SkillClient) -> Executor:
    """The single-shot CUE-R system's executor ([cuer] k)."""
    return Executor(skills, AgentConfig(mode="single_shot", k=config.cuer.k),
                    meta=run_meta(config.backend, skills))


def check_agent(ref: str | None) -> None:
    """[agent] factory: imported, called and its spec checked against its graph before
    any work (a mismatch is one `ConfigError`)."""
    if ref is not None:
        from cuer_agent.agents import load_agent
        load_agent(ref)

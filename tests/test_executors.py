"""`--executor process|ray`: worker processes give the same run directory as threads.

The studies' state travels to worker processes as a recipe (backend settings, cache
path, corpus) and is rebuilt there; results come back in input order, so every file is
the same bytes as a thread run's, and the workers' skill calls are counted in the
caller's ledger. The Ray test starts one local Ray with 2 CPUs for the module.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EVALUATE_KINDS, RUN, Background, Studies, cli_text, run_study
from fake_servers import FakeOllamaServer, FakeOpenAIServer, FakeServer

from cuer_agent import parallel
from cuer_agent.data import load_dataset
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.llm.cache import ResponseCache
from cuer_agent.llm.skills import PlanRequest
from cuer_agent.studies._common.dataset_run import retriever_factory

SECRET = "sk-test-SECRET-executors"
RUN_FILES = ("config.json", "traces.jsonl", "summary.json")
EVALUATE_FILES = ("summary.json", "single_shot/traces.jsonl", "single_shot/records.jsonl",
                  "agentic/traces.jsonl", "agentic/records.jsonl", "agentic/diagnoses.jsonl")


def evaluate(out: Path, *extra: str) -> Path:
    """A small evaluate: 4 examples, 3 faults, a probing, a skill-calling and a trace-only
    diagnoser — every kind of work that has to travel to a worker."""
    code, text = run_study(EVALUATE_KINDS, out, *extra)
    assert code == 0, text
    return out


def assert_same_files(a: Path, b: Path, names: tuple[str, ...]) -> None:
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def processes(background: Background) -> Path:
    """`cuer-agent run` (RUN) and `evaluate` (EVALUATE_KINDS) with `--executor process
    --workers 2`, each the CLI in a process of its own, run in the background lane
    (scenarios.process_executor): out/run, out/evaluate."""
    out, result = background.result("process_executor")
    for name, proc in result.items():
        assert proc["returncode"] == 0, f"{name}: {proc['stdout']}{proc['stderr']}"
    return out


@pytest.fixture(scope="module")
def runs(studies: Studies, processes: Path) -> dict[str, Path]:
    """The session's threaded `run --n 8` (the digest's), and the same in 2 processes."""
    return {"thread": studies.get(*RUN), "process": processes / "run"}


@pytest.fixture(scope="module")
def evaluate_thread(studies: Studies) -> Path:
    """The threaded run (the session's, shared with test_evaluate's concurrency test)."""
    return studies.get(*EVALUATE_KINDS)


# --- process ---------------------------------------------------------------------------------

@pytest.mark.background(EVALUATE_KINDS, "process_executor")
def test_process_run_writes_the_same_files_as_threads(runs: dict[str, Path]) -> None:
    assert_same_files(runs["thread"], runs["process"], RUN_FILES)


def test_process_run_counts_the_workers_skill_calls(runs: dict[str, Path]) -> None:
    def counts(out: Path) -> dict:
        ledger = json.loads((out / "ledger.json").read_text())
        return {"calls": ledger["calls"],
                "by_skill": {s: c["calls"] for s, c in ledger["by_skill"].items()}}

    assert counts(runs["process"]) == counts(runs["thread"])
    assert counts(runs["process"])["calls"] > 0


def test_process_evaluate_writes_the_same_files_as_threads(evaluate_thread: Path,
                                                           processes: Path) -> None:
    assert_same_files(evaluate_thread, processes / "evaluate", EVALUATE_FILES)


# --- ray -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'cuer-agent[ray]')")
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.e2e  # a whole local Ray cluster: the e2e lane (`pytest -m e2e`)
@pytest.mark.usefixtures("local_ray")
def test_ray_evaluate_writes_the_same_files_as_a_local_run(evaluate_thread: Path,
                                                           tmp_path: Path) -> None:
    # concurrency 4 over 2 actors: 2 examples in flight in each (threaded actors)
    out = evaluate(tmp_path / "ray", "--executor", "ray", "--workers", "2",
                   "--concurrency", "4")
    assert_same_files(evaluate_thread, out, EVALUATE_FILES)


# --- bad options -----------------------------------------------------------------------------

@pytest.mark.parametrize("extra, needle", [
    (["--executor", "gpu"], "--executor must be one of thread, process, ray"),
    (["--executor", "process", "--workers", "0"], "--workers must be >= 1"),
    (["--workers", "2"], "--workers needs --executor process or ray"),
    (["--executor", "process", "--ray-address", "auto"], "--ray-address needs --executor ray"),
    (["--concurrency", "0"], "--concurrency must be >= 1"),
])
def test_bad_executor_option_is_one_line_and_exit_2(tmp_path: Path, extra: list[str],
                                                    needle: str) -> None:
    code, text = cli_text("run", "--dataset", "synthetic", "--n", "2", "--out", str(tmp_path / "r"),
                     "--no-cache", "--no-progress", *extra)
    assert code == 2
    assert needle in text
    assert len(text.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()  # refused before any work


def test_ray_executor_without_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(parallel, "find_spec", lambda name: None)
    code, text = cli_text("evaluate", "--n", "2", "--out", str(tmp_path / "r"), "--no-cache",
                     "--executor", "ray")
    assert code == 2
    assert "pip install 'cuer-agent[ray]'" in text


# --- what travels to a worker ----------------------------------------------------------------

@pytest.fixture(params=["openai", "ollama"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    for name in ("OPENAI_BASE_URL", "OLLAMA_HOST", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with (FakeOpenAIServer() if request.param == "openai" else FakeOllamaServer()) as fake:
        fake.kind = request.param  # type: ignore[attr-defined]
        yield fake


def test_pickled_skill_client_carries_no_api_key_and_still_answers(server: FakeServer,
                                                                   tmp_path: Path) -> None:
    kind = server.kind  # type: ignore[attr-defined]
    client = SkillClient(make_backend(kind, model="m", base_url=server.url),
                         cache=ResponseCache(tmp_path / "cache.sqlite"))
    blob = pickle.dumps(Executor(client, AgentConfig()))
    assert SECRET.encode() not in blob
    rebuilt: Executor = pickle.loads(blob)
    request = PlanRequest(question="Who directed Film X?", hop=1, hop_budget=3)
    assert rebuilt.skills("plan", request).status == "ok"
    assert rebuilt.skills.cache is not None and len(rebuilt.skills.cache) == 1
    assert client("plan", request).cached  # the same cache file, reopened by path
    if kind == "openai":  # the worker read the key from its own environment
        assert server.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_pickled_executor_rebuilds_and_runs_the_same_trace() -> None:
    dataset = load_dataset("synthetic", n=2, hops=3, seed=7)
    retriever_for = retriever_factory(dataset)
    executor = Executor(SkillClient(make_backend("extractive")), AgentConfig(hop_budget=3),
                        meta={"backend": "extractive"})
    example = dataset.examples[0]
    expected = executor.run(example, retriever_for(example)).trace
    rebuilt: Executor = pickle.loads(pickle.dumps(executor))
    assert rebuilt.run(example, retriever_for(example)).trace == expected
    assert rebuilt.skills.ledger.total("calls") > 0
    assert rebuilt.skills.ledger is not executor.skills.ledger  # a worker counts its own


def test_a_worker_that_cannot_rebuild_the_task_raises_why_on_each_batch() -> None:
    host = parallel.TaskHost(pickle.dumps(SkillClient(make_backend("extractive")))[:-5])
    for _ in range(2):
        with pytest.raises(pickle.UnpicklingError):
            host.run(["x"], 1)


def test_retriever_factory_travels_as_its_corpus_not_its_index() -> None:
    dataset = load_dataset("synthetic", n=2, hops=3, seed=7)
    factory = retriever_factory(dataset)
    before = len(pickle.dumps(factory))
    factory(dataset.examples[0])  # builds the shared index
    assert len(pickle.dumps(factory)) == before
    rebuilt = pickle.loads(pickle.dumps(factory))
    example = dataset.examples[0]
    assert (rebuilt(example).retrieve(example.question, 5)
            == factory(example).retrieve(example.question, 5))

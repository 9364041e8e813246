"""The agents as LangGraph Server / Studio serve them (`graphs/server.py`, `langgraph.json`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuer_agent.data import Example, load_dataset
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.graphs.server import ServerContext, agent, live_context, single_shot
from cuer_agent.llm.backends import SkillClient, make_backend

REPO = Path(__file__).resolve().parents[1]
E2E = pytest.mark.e2e
"""The `langgraph dev` tests start a whole LangGraph server: the e2e lane (`pytest -m e2e`)."""


@pytest.fixture(scope="module")
def example() -> Example:
    """A question of the default synthetic world (the server context's default data)."""
    return load_dataset("synthetic", n=100, hops=3, seed=0).examples[0]


def test_a_question_alone_runs_the_agent_with_the_defaults(example: Example) -> None:
    out = agent().invoke({"question": example.question})
    assert set(out) == {"final_answer", "confidence", "observable_trace"}
    assert out["final_answer"] == out["observable_trace"]["answer"] != ""
    assert out["observable_trace"]["mode"] == "agentic"


def test_the_served_agent_takes_the_executors_steps(example: Example) -> None:
    served = agent().invoke({"question": example.question})["observable_trace"]
    live = live_context(ServerContext())
    executor = Executor(SkillClient(make_backend("extractive")), AgentConfig())
    ran = executor.run(example, live.retriever).trace.model_dump(mode="json")
    for key in ("steps", "hops", "answer", "confidence", "used_ids", "cost"):
        assert served[key] == ran[key], key


def test_single_shot_serves_one_retrieval(example: Example) -> None:
    out = single_shot().invoke({"question": example.question}, context={"k": 3})
    hops = out["observable_trace"]["hops"]
    assert len(hops) == 1 and len(hops[0]["retrieved"]) == 3


def test_the_context_k_takes_effect(example: Example) -> None:
    out = agent().invoke({"question": example.question}, context={"k": 2})
    assert {len(h["retrieved"]) for h in out["observable_trace"]["hops"]} == {2}


def test_the_live_context_is_built_once_per_distinct_value() -> None:
    assert live_context(ServerContext(k=4)) is live_context(ServerContext.model_validate(
        {"k": 4}))
    assert live_context(ServerContext(k=4)) is not live_context(ServerContext(k=3, n=20))


def test_an_unknown_context_key_fails_naming_it(example: Example) -> None:
    with pytest.raises(Exception, match="bogus"):
        agent().invoke({"question": example.question}, context={"bogus": 1})


def test_a_bad_context_value_fails_with_the_reason(example: Example) -> None:
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        agent().invoke({"question": example.question}, context={"backend": "nope"})


def test_an_empty_question_fails_saying_what_is_needed() -> None:
    with pytest.raises(ValueError, match="needs a question"):
        agent().invoke({"question": " "})


def test_schemas_studio_renders_are_not_null() -> None:
    graph = agent()
    assert graph.get_input_jsonschema()["properties"].keys() == {"question", "example_id"}
    assert set(graph.get_output_jsonschema()["properties"]) == {
        "final_answer", "confidence", "observable_trace"}
    context = graph.get_context_jsonschema()
    assert context is not None
    assert {"backend", "model", "k", "hop_budget", "retries_per_hop"} <= set(
        context["properties"])


def test_served_graphs_have_no_custom_checkpointer() -> None:
    assert agent().checkpointer is None and single_shot().checkpointer is None


# -------------------------------------------------------------------- langgraph dev

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def langgraph_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev --no-browser` on 127.0.0.1, serving the repository's langgraph.json
    (its paths made absolute, so the server's state stays in a temporary directory)."""
    pytest.importorskip("langgraph_api", reason="langgraph-cli[inmem] is in the test extra")
    cli = Path(sys.executable).with_name("langgraph")
    if not cli.exists():
        pytest.skip("the langgraph CLI is not installed beside this Python")
    work = tmp_path_factory.mktemp("langgraph-dev")
    spec = json.loads((REPO / "langgraph.json").read_text())
    spec["dependencies"] = [str(REPO)]
    spec["graphs"] = {name: str(REPO / path.split(":")[0]) + ":" + path.split(":")[1]
                      for name, path in spec["graphs"].items()}
    (work / "langgraph.json").write_text(json.dumps(spec))
    port = _free_port()
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    log = open(work / "server.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([str(cli), "dev", "--no-browser", "--no-reload", "--host",
                             "127.0.0.1", "--port", str(port), "--config", "langgraph.json"],
                            cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("langgraph dev did not start:\n" +
                            (work / "server.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _assistants(url: str) -> tuple[Any, dict[str, Any]]:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    return client, {a["graph_id"]: a for a in client.assistants.search()}


@E2E
def test_langgraph_dev_lists_both_assistants(langgraph_dev: str) -> None:
    _, assistants = _assistants(langgraph_dev)
    assert set(assistants) == {"agent", "single_shot"}


@E2E
@pytest.mark.parametrize("graph", ["agent", "single_shot"])
def test_langgraph_dev_runs_a_question_with_no_context(langgraph_dev: str, graph: str,
                                                       example: Example) -> None:
    # The agent gets the 3-hop question; the single-shot baseline its first hop's
    # sub-question (one retrieval cannot answer three hops).
    question, gold = ((example.question, example.answer) if graph == "agent" else
                      (example.hops[0].question, example.hops[0].answer))
    client, assistants = _assistants(langgraph_dev)
    out = client.runs.wait(None, assistants[graph]["assistant_id"],
                           input={"question": question})
    trace = out["observable_trace"]
    assert trace["question"] == question and trace["status"] == "ok"
    assert trace["steps"] and trace["hops"]
    assert out["final_answer"] == gold != ""


@E2E
@pytest.mark.parametrize("graph", ["agent", "single_shot"])
def test_langgraph_dev_takes_the_contexts_k(langgraph_dev: str, graph: str,
                                            example: Example) -> None:
    client, assistants = _assistants(langgraph_dev)
    out = client.runs.wait(None, assistants[graph]["assistant_id"],
                           input={"question": example.question}, context={"k": 2})
    assert {len(h["retrieved"]) for h in out["observable_trace"]["hops"]} == {2}


@E2E
def test_langgraph_dev_shows_the_context_form(langgraph_dev: str) -> None:
    client, assistants = _assistants(langgraph_dev)
    schemas = client.assistants.get_schemas(assistants["agent"]["assistant_id"])
    assert {"backend", "k", "hop_budget"} <= set(schemas["context_schema"]["properties"])
    assert set(schemas["input_schema"]["properties"]) == {"question", "example_id"}


@E2E
def test_langgraph_dev_tells_the_client_why_a_context_fails(langgraph_dev: str,
                                                           example: Example) -> None:
    client, assistants = _assistants(langgraph_dev)
    with pytest.raises(Exception, match="unknown backend 'nope'"):  # the run's own error
        client.runs.wait(None, assistants["agent"]["assistant_id"],
                         input={"question": example.question}, context={"backend": "nope"})


def test_a_data_set_without_a_shared_corpus_serves_from_its_paragraphs() -> None:
    """HotpotQA-style data has no shared corpus: the served retriever searches every
    example's paragraphs (each once)."""
    from cuer_agent.data import shared_sample_path

    path = shared_sample_path("hotpotqa")
    if path is None:
        pytest.skip("the shared HotpotQA sample (../shared/data) is not here")
    context = live_context(ServerContext(dataset="hotpotqa", path=str(path), n=5))
    retriever = context.retriever
    question = load_dataset("hotpotqa", path, n=5).examples[0].question
    assert retriever.retrieve(question, 3)

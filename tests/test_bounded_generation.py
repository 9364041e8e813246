"""Bounded generations, thinking off, strict schemas and rejected decoding parameters —
what the OpenAI-compatible and Ollama backends send and how they read the reply, against
the fake servers on 127.0.0.1 (`tests.fake_servers`); and the `[backend]` options that
reach them from a config file or the command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke
from fake_servers import Behaviour, FakeServer, Received
from pydantic import BaseModel

from cuer_agent.config import BackendSection, load_config, validate_config
from cuer_agent.errors import ConfigError
from cuer_agent.llm import bounds, prompts
from cuer_agent.llm._remote import SKILLS, RemoteBackend, RetryPolicy
from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.cache import ResponseCache
from cuer_agent.llm.ollama_backend import OllamaBackend
from cuer_agent.llm.openai_backend import OpenAIBackend
from cuer_agent.llm.skills import (
    AnswerRequest,
    BlameRequest,
    CheckRequest,
    JudgeRequest,
    LogStepView,
    PlanRequest,
    ReadRequest,
    VerdictRequest,
)

MODEL = "test-model"
NO_WAIT = RetryPolicy(max_attempts=3, initial_interval=0.0, max_retry_after=0.0)
QUESTION = "Who directed Film X?"
REQUESTS: dict[str, BaseModel] = {
    "plan": PlanRequest(question=QUESTION, hop=1, hop_budget=2),
    "read": ReadRequest(question=QUESTION, hop=1, subquery=QUESTION, evidence=()),
    "answer": AnswerRequest(question=QUESTION, hops=()),
    "judge": JudgeRequest(question=QUESTION, hops=(), answer="Ann Lee"),
    "check": CheckRequest(check="support", question=QUESTION, hops=(), answer="Ann Lee"),
    "blame": BlameRequest(task=QUESTION, steps=(
        LogStepView(step=0, agent="planner", content="look it up"),
        LogStepView(step=1, agent="websurfer", content="Ann Lee directed it")),
        ground_truth=None),
    "verdict": VerdictRequest(protocol="step_by_step", task=QUESTION, steps=(
        LogStepView(step=0, agent="planner", content="look it up"),), ask=(0, 0)),
}
UNSUPPORTED_TEMPERATURE = ("Unsupported value: 'temperature' does not support 0 with this "
                           "model. Only the default (1) value is supported.")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["openai", "ollama"])
def server(request: pytest.FixtureRequest) -> FakeServer:
    fake: FakeServer = request.getfixturevalue(f"{request.param}_server")
    return fake


def backend_at(server: FakeServer, **options: Any) -> RemoteBackend:
    options.setdefault("retry", NO_WAIT)
    options.setdefault("timeout", 5.0)
    kind = OpenAIBackend if server.chat_path.startswith("/v1") else OllamaBackend
    backend = kind(MODEL, base_url=server.url, **options)
    backend._sleep = lambda _: None  # type: ignore[method-assign]
    return backend


def ask(server: FakeServer, skill: str = "plan", **options: Any) -> dict[str, Any]:
    """The body of the one chat request a skill call sends."""
    SkillClient(backend_at(server, **options))(skill, REQUESTS[skill])
    [received] = server.chat_requests
    assert received.body is not None
    return received.body


def decoding(body: dict[str, Any]) -> dict[str, Any]:
    """The decoding options of a request body, under the protocol's own names."""
    return body.get("options", body)  # type: ignore[no-any-return]


def is_openai(received: Received | dict[str, Any]) -> bool:
    body = received.body if isinstance(received, Received) else received
    return body is not None and "response_format" in body


# --- what is sent ---------------------------------------------------------------------------

def limit_of(skill: str) -> int:
    """The output-token bound a request of the skill's implies (`bounds.token_bound`)."""
    ids = bounds.ids_in_view(skill, REQUESTS[skill])
    enums = bounds.enums_in_view(skill, REQUESTS[skill])
    return bounds.token_bound(prompts.reply_schema(skill, ids, enums))


@pytest.mark.parametrize("skill", SKILLS)
def test_each_skill_sends_the_token_bound_its_schema_implies(server: FakeServer,
                                                             skill: str) -> None:
    body = ask(server, skill)

    name = "max_tokens" if is_openai(body) else "num_predict"
    assert decoding(body)[name] == limit_of(skill)


def test_configured_limit_overrides_one_skill_only(server: FakeServer) -> None:
    backend = backend_at(server, max_tokens={"answer": 40})

    assert backend.max_tokens == {"answer": 40}
    body = ask(server, "answer", max_tokens={"answer": 40})
    assert 40 in decoding(body).values()


def test_thinking_is_switched_off_by_default(server: FakeServer) -> None:
    body = ask(server)

    if is_openai(body):
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
    else:
        assert body["think"] is False


def test_think_true_leaves_thinking_to_the_model(server: FakeServer) -> None:
    body = ask(server, think=True)

    assert "chat_template_kwargs" not in body
    assert body.get("think") in (None, True)


def test_api_openai_com_gets_no_chat_template_kwargs(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuer_agent.llm.openai_backend import openai_body

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    backend = OpenAIBackend(MODEL)
    body = openai_body(backend, [], {}, 10, template_kwargs=False, sampling=backend.sampling())

    assert "chat_template_kwargs" not in body and body["max_tokens"] == 10


def test_openai_schema_is_sent_strict(openai_server: FakeServer) -> None:
    body = ask(openai_server)

    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True


def test_omitted_parameters_are_not_sent(server: FakeServer) -> None:
    body = ask(server, omit=("temperature", "seed", "max_tokens", "think"))

    sent = decoding(body)
    assert not {"temperature", "seed", "max_tokens", "num_predict"} & set(sent)
    assert "chat_template_kwargs" not in body and body.get("think") is None


def test_unknown_omitted_parameter_is_config_error(openai_server: FakeServer) -> None:
    with pytest.raises(ConfigError, match="top_p"):
        backend_at(openai_server, omit=("top_p",))


def test_limits_and_thinking_are_part_of_the_cache_key(openai_server: FakeServer) -> None:
    base = backend_at(openai_server).decoding()

    assert backend_at(openai_server, max_tokens={"read": 99}).decoding() != base
    assert backend_at(openai_server, think=True).decoding() != base
    assert backend_at(openai_server, timeout=1.0).decoding() == base  # waiting only


# --- what comes back -------------------------------------------------------------------------

def test_a_reply_cut_inside_a_decisive_field_is_a_parse_failure_without_repair(
        server: FakeServer) -> None:
    server.script(Behaviour(content='{"action": "search", "subquery": "Who dir',
                            truncated=True))
    client = SkillClient(backend_at(server))
    result = client("plan", REQUESTS["plan"])

    assert result.status == "parse_failure"
    assert result.error == (f"hit max_tokens ({limit_of('plan')} for plan); closed, it is "
                            "still invalid: it lacks subquery")
    assert len(server.chat_requests) == 1  # a repair turn would be cut again
    counts = client.ledger.by_skill["plan"]
    assert (counts.parse_failures, counts.cut, counts.repaired) == (1, 1, 0)


def test_a_reply_cut_in_its_explanation_is_closed_and_counted_repaired(
        server: FakeServer) -> None:
    server.script(Behaviour(content='{"action": "search", "subquery": "Who directed Film X?",'
                                    ' "reason": "The question asks for the dir',
                            truncated=True))
    client = SkillClient(backend_at(server))
    result = client("plan", REQUESTS["plan"])

    assert result.status == "ok" and result.response is not None
    assert result.response.model_dump() == {"action": "search",
                                            "subquery": "Who directed Film X?", "reason": ""}
    counts = client.ledger.by_skill["plan"]
    assert (counts.parse_failures, counts.cut, counts.repaired) == (0, 1, 1)


def test_a_trace_rows_spent_records_each_skills_cut_and_repaired_replies(
        server: FakeServer, tmp_path: Path) -> None:
    # What summary.json's per-skill ledger is summed from: the counts travel with the
    # request log (a cached repeat counts the same), not with the process's ledger.
    server.script(Behaviour(content='{"action": "search", "subquery": "Who directed Film X?",'
                                    ' "reason": "The question asks for the dir',
                            truncated=True))
    client = SkillClient(backend_at(server), cache=ResponseCache(tmp_path / "cache.sqlite"))
    with client.collect() as first:
        client("plan", REQUESTS["plan"])
    with client.collect() as repeat:
        client("plan", REQUESTS["plan"])

    assert first.spent_by_skill() == repeat.spent_by_skill() == {
        "plan": {"completion_tokens": first.completion_tokens, "cut": 1,
                 "parse_failures": 0, "repaired": 1, "requests": 1}}
    assert len(server.chat_requests) == 1


def test_a_reply_that_closes_exactly_at_the_limit_is_still_counted_cut(
        server: FakeServer) -> None:
    # The model did not choose to stop: a cut reply is never taken as whole silently.
    server.script(Behaviour(content='{"action": "answer"}', truncated=True))
    client = SkillClient(backend_at(server))
    result = client("plan", REQUESTS["plan"])

    assert result.status == "parse_failure" and result.error.startswith("hit max_tokens")
    assert client.ledger.by_skill["plan"].cut == 1


def test_rejected_temperature_is_one_config_error_without_retry(server: FakeServer) -> None:
    server.script(Behaviour(status=400, error=UNSUPPORTED_TEMPERATURE))
    with pytest.raises(ConfigError, match=r"rejects `temperature`.*--omit temperature"):
        SkillClient(backend_at(server))("plan", REQUESTS["plan"])

    assert len(server.chat_requests) == 1


def test_ollama_think_on_a_model_without_thinking_names_think(ollama_server: FakeServer) -> None:
    ollama_server.script(Behaviour(status=400, error=f'"{MODEL}" does not support thinking'))
    with pytest.raises(ConfigError, match=r"rejects `think`.*--omit think"):
        SkillClient(backend_at(ollama_server, think=True))("plan", REQUESTS["plan"])


def test_other_400_stays_a_backend_error(server: FakeServer) -> None:
    from cuer_agent.llm.backends import BackendError

    server.script(Behaviour(status=400, error="context length exceeded"))
    with pytest.raises(BackendError, match="after 1 attempt"):
        SkillClient(backend_at(server))("plan", REQUESTS["plan"])


# --- options from a config file and the command line ------------------------------------------

def test_config_backend_section_reads_limits_timeout_and_omit(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text('[backend]\nname = "openai"\ntimeout = 300\nomit = ["seed"]\n'
                    "[backend.max_tokens]\nanswer = 512\n")
    engine = load_config(path).backend

    options = engine.client_options(seed=7)
    assert (options["timeout"], options["omit"], options["seed"]) == (300, ("seed",), 7)
    assert options["max_tokens"] == {"answer": 512} and options["think"] is False


@pytest.mark.parametrize(("section", "key"), [
    ({"max_tokens": {"summarise": 10}}, "backend.max_tokens"),
    ({"max_tokens": {"answer": 0}}, "backend.max_tokens"),
    ({"omit": ["top_p"]}, "backend.omit"),
    ({"timeout": 0}, "backend.timeout"),
    ({"threads": 0}, "backend.threads"),
])
def test_bad_backend_option_names_the_key(section: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=rf"study.toml: {key}:"):
        validate_config({"backend": section}, "study.toml")


def test_threads_apply_to_llamacpp_only() -> None:
    with pytest.raises(ConfigError, match="--threads applies to --backend llamacpp"):
        BackendSection(name="openai", threads=2).client_options(seed=0)


def test_timeout_is_left_out_of_a_recorded_config() -> None:
    recorded = BackendSection(name="openai", model="m", timeout=5).model_dump(mode="json")

    assert "timeout" not in recorded and recorded["max_tokens"] == {}


def run_against(server: FakeServer, out: Path, *flags: str) -> Any:
    return invoke([
        "run", "--dataset", "synthetic", "--hops", "2", "--n", "1", "--out", str(out),
        "--backend", "openai", "--model", MODEL, "--base-url", server.url, "--no-cache",
        "--no-progress", *flags])


def test_run_with_a_longer_timeout_resumes_the_same_run(openai_server: FakeServer,
                                                        tmp_path: Path) -> None:
    first = run_against(openai_server, tmp_path / "run", "--timeout", "5")
    again = run_against(openai_server, tmp_path / "run", "--timeout", "50")

    assert first.exit_code == 0, first.output
    assert again.exit_code == 0, again.output  # same recorded config: resumed, not refused
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["backend"]["name"] == "openai" and "timeout" not in config["backend"]


def test_rejected_parameter_exits_2_with_one_line(openai_server: FakeServer,
                                                  tmp_path: Path) -> None:
    openai_server.script(*[Behaviour(status=400, error=UNSUPPORTED_TEMPERATURE)] * 2)
    result = run_against(openai_server, tmp_path / "run")

    assert result.exit_code == 2
    [line] = [x for x in result.output.splitlines() if x.strip()]
    assert line.startswith("error: backend openai: model 'test-model' rejects `temperature`")
    assert len(openai_server.chat_requests) == 1


def test_omit_flag_leaves_the_parameter_out(openai_server: FakeServer, tmp_path: Path) -> None:
    result = run_against(openai_server, tmp_path / "run", "--omit", "temperature,seed")

    assert result.exit_code == 0, result.output
    bodies = [r.body or {} for r in openai_server.chat_requests]
    assert bodies and not any("temperature" in b or "seed" in b for b in bodies)


def test_replay_asks_the_model_as_the_run_did(openai_server: FakeServer,
                                              tmp_path: Path) -> None:
    out, cache = tmp_path / "study", tmp_path / "cache.sqlite"
    study = invoke([
        "propagate", "--hops", "2", "--n", "1", "--seed", "3", "--faults",
        "early_termination", "--no-hop-operators", "--no-strict", "--out", str(out),
        "--backend", "openai", "--model", MODEL, "--base-url", openai_server.url,
        "--omit", "think", "--cache", str(cache), "--no-progress"])
    assert study.exit_code == 0, study.output
    asked = len(openai_server.chat_requests)
    record = next(row["record"]["record_id"] for row in
                  map(json.loads, (out / "traces.jsonl").read_text().splitlines())
                  if row["record"]["condition"] == "early_termination" and row["trace"])

    replayed = invoke(["replay", str(out), "--record", record,
                       "--cache", str(cache)])

    assert replayed.exit_code == 0 and "identical" in replayed.stdout, replayed.output
    # the seed (3) and the omitted option came from the run's config: every request was
    # the run's own, answered by the cache
    assert len(openai_server.chat_requests) == asked

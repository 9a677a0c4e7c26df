"""Pytest fixtures for the scripted LLM server (import them from conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import ScriptedLLM


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """A started scripted OpenAI-compatible server on a free loopback port."""
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.shutdown()

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


@pytest.fixture
def llamacpp(runtime, llm: ScriptedLLM) -> ScriptedLLM:
    """The scripted server named as llama.cpp's (a kind known to hold answers to a JSON
    schema), its profile kept as a probe would keep it (so that no probe request takes a
    scripted answer)."""
    from mimikit.llm.profile import profile_for
    from mimikit.llm.profile_store import RedisProfiles

    llm.owner = "llamacpp"
    for model in ("teller", "planner", "worker"):
        profile = profile_for(llm.url, model, ["llamacpp"])
        profile.probed = True
        RedisProfiles(runtime.redis, runtime.keys.llm_profiles).save(profile)
    return llm

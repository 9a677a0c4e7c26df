"""Shared fixtures: a real redis-server, real Celery worker/beat processes, the scripted LLM.

The environment is set before anything imports the Celery configuration, so the test process
and every worker process it starts talk to the same session redis-server.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_helpers import wired  # noqa: F401  (fixture)
from figures import figures, pytest_terminal_summary  # noqa: F401  (fixture, hook)
from forking import Forker, shared
from llm_fixtures import llamacpp, llm  # noqa: F401  (fixtures)
from processes import ProcessPool, RedisServer, free_port, wait_for

SESSION_DIR = Path(tempfile.mkdtemp(prefix="mimikit-tests-"))
REDIS_PORT = free_port()
# The instance under test is configured here alone; what the test run itself is told
# (MIMIKIT_TEST_*: a real LLM to try; MIMIKIT_REQUIRE_BROWSER) is kept.
for name in list(os.environ):
    if name.startswith(("MIMIKIT_", "OPENAI_")) and not name.startswith(
            ("MIMIKIT_TEST_", "MIMIKIT_REQUIRE_")):
        del os.environ[name]
os.environ.update({
    "MIMIKIT_REDIS_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
    "MIMIKIT_STATE_DIR": str(SESSION_DIR / "state"),
    "MIMIKIT_WORK_DIR": str(SESSION_DIR / "work"),
    "MIMIKIT_TICK_SECONDS": "0.5",
    "MIMIKIT_HEARTBEAT_SECONDS": "3",
    "MIMIKIT_LLM_RETRIES": "0",
    "MIMIKIT_TELLER_MODEL": "teller",
    "MIMIKIT_PLANNER_MODEL": "planner",
    "MIMIKIT_WORKER_MODEL": "worker",
    "MIMIKIT_MODEL": "default",
})


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer(REDIS_PORT, SESSION_DIR / "redis").start()
    yield server
    server.stop()
    shutil.rmtree(SESSION_DIR, ignore_errors=True)


@pytest.fixture
def runtime(redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A clean instance: empty Redis, its own state and work dirs."""
    from mimikit.config import load_settings
    from mimikit.store.runtime import build_runtime, reset_runtime

    redis_server.client().flushall()
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("MIMIKIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MIMIKIT_WORK_DIR", str(tmp_path / "work"))
    reset_runtime()
    yield build_runtime(load_settings())
    reset_runtime()


@pytest.fixture(scope="session")
def forker() -> Forker:
    """The parent every test's Celery workers and beats are forked from (``forking.py``)."""
    return shared()


@pytest.fixture
def procs(runtime, tmp_path: Path, forker: Forker) -> Iterator[ProcessPool]:
    """Start real Celery workers and beats for one test; all are killed afterwards."""
    pool = ProcessPool(tmp_path / "logs", runtime, forker)
    yield pool
    pool.stop_all()


@pytest.fixture
def stack(runtime, procs: ProcessPool, llm, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    """A running instance: the scripted LLM configured, workers on every queue."""
    from mimikit.store.runtime import reset_runtime

    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    reset_runtime()
    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    procs.wait_ready(  # both start at once: each takes a core for its imports
        procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents", wait=False),
        procs.worker(queues="worker", concurrency=2, name="tasks", wait=False))
    return runtime


__all__ = ["wait_for"]

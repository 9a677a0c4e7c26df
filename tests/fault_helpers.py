"""Shared by the fault tests: the scripted LLM wired into real processes, and what to count."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Any, Self

import pytest
from llm_server import ScriptedLLM, delay, text, tool_call

from mimikit.models import Task

TASK_HEADING = re.compile(r"## Task (task-[0-9a-f]+)")


class Background:
    """Runs ``_run`` on a daemon thread from ``start`` until ``stop`` sets ``_stop``."""

    join_seconds = 15.0

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.join_seconds)

    def _run(self) -> None:
        raise NotImplementedError


@pytest.fixture
def wired(runtime, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch):
    """The instance with the scripted LLM configured for this process and every child."""
    from mimikit.store.runtime import reset_runtime

    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    reset_runtime()
    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    llm.default("teller", text("Noted."))
    return runtime


def worker_answers_after(seconds: float) -> dict[str, Any]:
    """A Worker model that thinks ``seconds`` and then submits a done text result."""
    return delay(seconds, tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "finished"}))


def worker_requests_per_task(llm: ScriptedLLM) -> Counter[str]:
    """How many Worker LLM requests each task id caused (one per run that reached the LLM)."""
    counts: Counter[str] = Counter()
    for body in llm.requests_for("worker"):
        prompt = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        found = TASK_HEADING.search(prompt or "")
        if found:
            counts[found.group(1)] += 1
    return counts


def completions(runtime: Any, task_id: str) -> int:
    """How many times the recorded state says ``task_id`` finished done."""
    return sum(1 for e in runtime.tasks.log_of(task_id) if e["type"] == "task_done")


def statuses(runtime: Any, tasks: list[Task]) -> Counter[str]:
    return Counter(t.status for t in runtime.tasks.by_id([t.id for t in tasks]))


def wait_until(predicate: Any, timeout: float, message: str, interval: float = 0.1,
               describe: Any = None) -> float:
    """Poll ``predicate``; the seconds it took, or fail the test after ``timeout`` (saying what
    ``describe()`` returns, when given)."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if predicate():
            return time.monotonic() - began
        time.sleep(interval)
    seen = f"; {describe()}" if describe else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {message}{seen}")

"""A real model in the loop: a greeting, a file task, a daily schedule, a Chinese ``remember``
and a question, on the real stack against a real OpenAI-compatible server.

Skipped unless ``MIMIKIT_TEST_LLM_URL`` names such a server (and ``MIMIKIT_TEST_LLM_MODEL`` its
model), e.g. llama.cpp's ``llama-server --jinja`` with a small Qwen2.5 instruct model. A small
model may do the work badly; what must hold is that the person is never left without an
answer, nor with a promise that nothing backs. Each test prints its figures (LLM calls,
seconds, outcome).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_helpers import history, post_input
from processes import wait_for

URL = os.environ.get("MIMIKIT_TEST_LLM_URL")
MODEL = os.environ.get("MIMIKIT_TEST_LLM_MODEL", "default")
TURN_SECONDS = float(os.environ.get("MIMIKIT_TEST_LLM_TURN_SECONDS", "600"))
pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(3600),
              pytest.mark.skipif(not URL, reason="MIMIKIT_TEST_LLM_URL is not set")]


@pytest.fixture
def real(runtime, procs, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An instance on the real model: every role uses it, with room for its slowness."""
    from mimikit.store.runtime import reset_runtime

    env = {"MIMIKIT_LLM_BASE_URL": URL, "MIMIKIT_MODEL": MODEL, "MIMIKIT_TELLER_MODEL": MODEL,
           "MIMIKIT_PLANNER_MODEL": MODEL, "MIMIKIT_WORKER_MODEL": MODEL,
           "MIMIKIT_TELLER_TIMEOUT": "300", "MIMIKIT_LLM_TIMEOUT": "300",
           "MIMIKIT_PLANNER_TIMEOUT": "900", "MIMIKIT_WORKER_TIMEOUT": "900"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    reset_runtime()
    from mimikit.config import load_settings

    runtime.settings = load_settings()
    procs.wait_ready(
        procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents",
                     wait=False),
        procs.worker(queues="worker", concurrency=1, name="tasks", wait=False))
    procs.beat()
    yield runtime


def _turn(runtime: Any, text: str, figures: Any, label: str) -> list[tuple[str, str]]:
    """Post ``text`` and wait for the Teller's reply (or a notice that it is kept)."""
    began, before = time.monotonic(), len(history(runtime))
    post_input(runtime, text)
    found = wait_for(lambda: [m for m in history(runtime)[before:] if m[0] == "assistant"],
                     timeout=TURN_SECONDS, interval=0.5, message=f"an answer to {text!r}")
    runs = runtime.runs.of("teller")
    calls = sum(run.get("steps", 0) for run in runs)
    tools = [f"{c['name']}({c['arguments'][:80]})" for run in runs
             for c in run.get("toolCalls", [])]
    figures.record(label, seconds=time.monotonic() - began, teller_calls=calls,
                   reply=found[0][1][:120], tools="; ".join(tools)[:400])
    return found


def _planner_started(runtime: Any) -> bool:
    return bool([t for t in runtime.tasks.with_status("queued", "running", "done", "failed")
                 if t.role == "planner"])


def _teller_idle(runtime: Any) -> bool:
    return not runtime.inbox.read() and not runtime.redis.exists(runtime.keys.teller_lock)


def _handed_over(runtime: Any, figures: Any, label: str, answer: str) -> None:
    """Wait for the request to reach the Planner, answering in the chat box, as a person
    would, up to two questions the Teller asks first (in a question card or in its reply)."""
    for round_ in range(3):
        wait_for(lambda: _planner_started(runtime) or runtime.conversation.question()
                 or _teller_idle(runtime), timeout=TURN_SECONDS, interval=1,
                 message="the request handed over, or a question")
        if _planner_started(runtime) or round_ == 2:
            break
        _turn(runtime, answer, figures, f"{label} answer {round_ + 1}")
    wait_for(lambda: _planner_started(runtime), timeout=TURN_SECONDS, interval=1,
             message="the request handed to the Planner")


def test_a_greeting_gets_a_reply(real, figures):
    replies = _turn(real, "hello!", figures, "greeting")
    assert replies and replies[0][1].strip()
    assert not any("tool_call" in t or '"name"' in t for _r, t in replies)


def test_a_file_task_is_delegated_and_runs(real, figures):
    _turn(real, "Create a file notes.txt containing the word hello.", figures, "file task")
    _handed_over(real, figures, "file task", "Just create notes.txt with the word hello in it.")
    began = time.monotonic()
    finished = wait_for(lambda: [t for t in real.tasks.with_status("done", "failed")
                                 if t.role == "worker"], timeout=3 * TURN_SECONDS, interval=2,
                        message="a Worker task run")
    figures.record("file task worker", seconds=time.monotonic() - began,
                   status=finished[0].status,
                   file=(real.settings.work_dir / "notes.txt").exists())


def test_a_daily_schedule_is_made(real, figures):
    _turn(real, "Every day at 9am remind me to drink water.", figures, "daily schedule")
    _handed_over(real, figures, "daily schedule", "Yes: every day at 9am, remind me to drink "
                 "water.")
    began = time.monotonic()
    planner = wait_for(lambda: [t for t in real.tasks.with_status("done", "failed")
                                if t.role == "planner"], timeout=2 * TURN_SECONDS, interval=2,
                       message="the Planner to finish")
    triggers = [t for t in real.triggers.all() if t.type == "recurring"]
    calls = [f"{c['name']}({c['arguments'][:120]})" for run in real.runs.of(planner[0].id)
             for c in run.get("toolCalls", [])]
    figures.record("daily schedule planner", seconds=time.monotonic() - began,
                   status=planner[0].status, recurring_triggers=len(triggers),
                   calls="; ".join(calls)[:600])


def test_a_chinese_remember_is_kept(real, figures):
    replies = _turn(real, "请记住：我喜欢喝绿茶。", figures, "chinese remember")
    memory = real.settings.state_dir / "memory.md"
    recent = list((real.settings.state_dir / "memory").glob("*.md"))
    kept = (memory.exists() and "绿茶" in memory.read_text(encoding="utf-8")) or any(
        "绿茶" in path.read_text(encoding="utf-8") for path in recent)
    figures.record("chinese remember kept", kept=kept)
    assert replies[0][1].strip()


def test_a_question_is_answered(real, figures):
    replies = _turn(real, "What is the capital of France?", figures, "question")
    assert replies[0][1].strip()


def test_a_new_request_typed_while_a_question_is_pending_is_not_its_answer(real, figures):
    from mimikit.models import PendingQuestion

    real.conversation.ask(PendingQuestion(question="What is your favorite color?"))
    _turn(real, "create a file notes.txt containing the word hello", figures, "typed request")
    wait_for(lambda: _planner_started(real), timeout=TURN_SECONDS, interval=1,
             message="the request handed to the Planner")
    planner = next(t for t in real.tasks.with_status("queued", "running", "done", "failed")
                   if t.role == "planner")
    # asked again as the pass ends, just after it handed the request over
    wait_for(lambda: real.conversation.question() is not None or _teller_idle(real),
             timeout=TURN_SECONDS, interval=0.5, message="the pass to end")
    again = real.conversation.question()
    figures.record("typed request", planner=planner.prompt[:120],
                   asked_again=again.question if again else None)
    assert "notes.txt" in planner.prompt and "Answer" not in planner.prompt
    assert again is not None and again.question == "What is your favorite color?"

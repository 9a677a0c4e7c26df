"""Worker backends end to end: the ``codex`` CLI (a fake on PATH) and cancel of running work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from llm_server import tool_call
from processes import pid_alive, wait_for
from web_helpers import commands_running

from mimikit.lifecycle.cancel import cancel_task
from mimikit.lifecycle.submit import submit
from mimikit.models import Task

BIN = Path(__file__).resolve().parent / "bin"
SLEEP_ARG = "59.75"  # an unusual duration, so the test finds only its own sleep process




@pytest.fixture
def codex_stack(runtime, procs, monkeypatch):
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MIMIKIT_WORKER_BACKEND", "codex")
    procs.worker(queues="worker", concurrency=1, name="codex")
    return runtime


def _run(runtime, prompt, timeout=None):
    return submit(runtime, [Task(prompt=prompt, timeout=timeout)])[0]


def _finished(runtime, task):
    return wait_for(lambda: (t := runtime.tasks.get(task.id)) and t.finished and t,
                    timeout=40, message=f"{task.id} to finish")


def test_codex_backend_success_is_parsed_and_validated(codex_stack):
    task = _run(codex_stack, "Say hi. FAKE_CODEX:ok")
    assert _finished(codex_stack, task).status == "done"
    result = codex_stack.tasks.result(task.id)
    assert result.resultType == "text" and result.result["text"]


def test_codex_backend_malformed_output_fails_with_the_reason(codex_stack):
    task = _run(codex_stack, "FAKE_CODEX:malformed")
    assert _finished(codex_stack, task).status == "failed"
    assert "JSON" in codex_stack.tasks.result(task.id).error


@pytest.mark.slow
def test_codex_timeout_kills_the_process_group_leaving_no_orphan(codex_stack):
    task = _run(codex_stack, "FAKE_CODEX:sleep", timeout=3)
    pid_file = Path(codex_stack.settings.work_dir) / ".fake-codex-child.pid"
    child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=20,
                         message="the fake codex child"))
    assert _finished(codex_stack, task).status == "failed"
    assert "timed out" in codex_stack.tasks.result(task.id).error
    wait_for(lambda: not pid_alive(child), timeout=5, message="the codex child to be gone")


@pytest.mark.slow
def test_canceling_a_running_codex_task_stops_it_within_5_seconds(codex_stack):
    import time

    task = _run(codex_stack, "FAKE_CODEX:sleep")
    pid_file = Path(codex_stack.settings.work_dir) / ".fake-codex-child.pid"
    child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=20,
                         message="the fake codex child"))
    started = time.monotonic()
    assert cancel_task(codex_stack, task.id, stop_running=True)[0]
    wait_for(lambda: codex_stack.tasks.get(task.id).status == "canceled", timeout=5,
             message="status canceled")
    wait_for(lambda: not pid_alive(child), timeout=5 - (time.monotonic() - started),
             message="the codex child to be gone")


@pytest.mark.slow
def test_canceling_a_running_shell_task_stops_it_within_5_seconds(stack, llm):
    import time

    # Found in /proc by its unusual duration: in the shell's sandbox $$ is another PID namespace's.
    llm.script("worker", tool_call("shell", command=f"exec sleep {SLEEP_ARG}", timeout=120))
    llm.default("teller", tool_call("reply", text="ok"))
    task = _run(stack, "sleep for a long time")
    (pid,) = wait_for(lambda: commands_running("sleep", SLEEP_ARG), timeout=20,
                      message="the shell command to start")
    started = time.monotonic()
    success, _ = cancel_task(stack, task.id, stop_running=True)
    assert success
    wait_for(lambda: not pid_alive(pid), timeout=5, message="the sleep to be killed")
    wait_for(lambda: stack.tasks.get(task.id).status == "canceled",
             timeout=5 - (time.monotonic() - started) + 1, message="status canceled")
    assert time.monotonic() - started < 5
    wait_for(lambda: any(m.text.startswith("Task canceled")
                         for m in stack.conversation.recent(20)),
             message="the note that the task was canceled")  # written after the status

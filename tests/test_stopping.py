"""Cancel and timeout of a running Worker on the threads pool, where Celery cannot terminate a
task: the run stops itself (its heartbeat thread), with an LLM call or a shell command in
flight, leaves no process behind, frees its thread, and leaves the other runs of its process
alone. The same cooperative stop serves the pools a user may pick instead (prefork, solo).

Real processes: redis-server, a Celery worker on the threads pool, the real Worker agent, its
shell commands in the sandbox, the scripted LLM over HTTP.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import wait_until
from llm_server import hang, tool_call

from mimikit.lifecycle.cancel import cancel_task
from mimikit.lifecycle.submit import submit
from mimikit.models import Task

pytestmark = pytest.mark.slow


def _prompt(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "user"), "")


def _worker_model(body: dict[str, Any]) -> dict[str, Any]:
    """``hang`` tasks wait on the LLM forever; ``run: COMMAND`` tasks run it, then report its
    output; the others finish at once."""
    prompt = _prompt(body)
    answered = [m for m in body["messages"] if m["role"] == "tool"]
    if "hang" in prompt:
        return hang(300)
    if "run: " in prompt and not answered:
        return tool_call("shell", command=prompt.split("run: ", 1)[1].strip())
    output = answered[-1]["content"] if answered else "nothing run"
    return tool_call("submit_result", status="done", resultType="text", result={"text": output})


def _processes_with(marker: str) -> list[int]:
    """Live processes whose command line has ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in command and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _status(runtime, task: Task) -> str:
    return runtime.tasks.require(task.id).status


def _asked(llm, task: Task) -> bool:
    return any(task.id in _prompt(body) for body in llm.requests_for("worker"))


def _worker(procs, concurrency: int, pool: str = "threads"):
    return procs.worker(queues="worker", concurrency=concurrency, name="tasks", pool=pool)


@pytest.mark.parametrize("pool", ["threads", "prefork", "solo"])
def test_cancel_abandons_the_llm_call_in_flight_and_frees_the_thread(wired, procs, llm,
                                                                     figures, pool):
    runtime = wired
    llm.default("worker", _worker_model)
    worker = _worker(procs, concurrency=1, pool=pool)  # one slot: the next task needs it back
    slow = submit(runtime, [Task(prompt="hang on the model")])[0]
    wait_until(lambda: _asked(llm, slow), 20, "the LLM call of the run")
    asked = time.monotonic()
    assert cancel_task(runtime, slow.id, stop_running=True) == (True, "canceled")
    stopped = wait_until(lambda: _status(runtime, slow) == "canceled", 10, "the cancel")
    following = submit(runtime, [Task(prompt="after the cancel")])[0]
    freed = wait_until(lambda: _status(runtime, following) == "done", 15, "the next task")
    figures.record(f"cancel with an LLM call in flight ({pool} pool)",
                   canceled_after_s=round(stopped, 2), next_task_done_after_s=round(freed, 2),
                   call_waited_s=round(time.monotonic() - asked, 1))
    assert stopped < 3
    assert runtime.tasks.require(slow.id).error == "canceled by user"
    assert worker.poll() is None


def test_timeout_abandons_the_llm_call_in_flight_and_frees_the_thread(wired, procs, llm,
                                                                      figures):
    runtime = wired
    llm.default("worker", _worker_model)
    _worker(procs, concurrency=1)
    slow = submit(runtime, [Task(prompt="hang on the model", timeout=2)])[0]
    wait_until(lambda: _asked(llm, slow), 20, "the LLM call of the run")
    ended = wait_until(lambda: _status(runtime, slow) == "failed", 10, "the timeout")
    following = submit(runtime, [Task(prompt="after the timeout")])[0]
    wait_until(lambda: _status(runtime, following) == "done", 15, "the next task")
    figures.record("timeout (2 s) with an LLM call in flight (threads pool)",
                   failed_after_call_s=round(ended, 2))
    assert "timed out after 2 s" in runtime.tasks.result(slow.id).error
    assert ended < 4


def test_cancel_kills_the_shell_command_of_its_run_only(wired, procs, llm, figures):
    runtime = wired
    llm.default("worker", _worker_model)
    worker = _worker(procs, concurrency=2)  # two runs in one process
    victim = submit(runtime, [Task(prompt="run: sleep 3171 & sleep 3172; echo never")])[0]
    sibling = submit(runtime, [Task(prompt="run: sleep 4.5 && echo sibling-kept")])[0]
    wait_until(lambda: _processes_with("sleep 3171") and _processes_with("sleep 4.5"), 30,
               "both shell commands to run")
    cancel_task(runtime, victim.id, stop_running=True)
    stopped = wait_until(lambda: _status(runtime, victim) == "canceled", 10, "the cancel")
    gone = wait_until(lambda: not _processes_with("sleep 317"), 10, "its processes to go")
    assert _processes_with("sleep 4.5"), "the other run's command was killed too"
    wait_until(lambda: _status(runtime, sibling) == "done", 30, "the other run to finish")
    figures.record("cancel with a shell command in flight", canceled_after_s=round(stopped, 2),
                   processes_gone_after_s=round(stopped + gone, 2))
    assert "sibling-kept" in runtime.tasks.result(sibling.id).result["text"]
    assert worker.poll() is None


def test_timeout_kills_the_shell_command_in_flight(wired, procs, llm):
    runtime = wired
    llm.default("worker", _worker_model)
    _worker(procs, concurrency=2)
    slow = submit(runtime, [Task(prompt="run: sleep 3173 & sleep 3174; echo never",
                                 timeout=3)])[0]
    wait_until(lambda: _processes_with("sleep 3173"), 30, "the shell command to run")
    wait_until(lambda: _status(runtime, slow) == "failed", 10, "the timeout")
    wait_until(lambda: not _processes_with("sleep 317"), 10, "its processes to go")
    assert "timed out after 3 s" in runtime.tasks.result(slow.id).error

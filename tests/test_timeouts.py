"""Task timeouts: the run stops, the task fails with a timeout error, or retries per policy."""

from __future__ import annotations

import time
from datetime import timedelta

from mimikit.delivery.execution import RunControl, execute
from mimikit.models import Result, RetryPolicy, Task, utcnow
from mimikit.supervisor import recovery


def _sleeper(seconds: float):
    def body(control: RunControl) -> Result:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            control.check()
            time.sleep(0.02)
        return Result(id=control.task.id, status="done", result={"text": "slept"},
                      attempts=control.task.attempts)
    return body


def test_a_task_past_its_timeout_fails_with_a_timeout_error(runtime):
    task = runtime.state.add_tasks([Task(prompt="slow", timeout=0.3)])[0]
    began = time.monotonic()
    execute(runtime.state, task.id, "c1", 60, _sleeper(5))
    assert time.monotonic() - began < 2
    assert runtime.state.get_task(task.id).status == "failed"
    assert "timed out after" in runtime.state.get_result(task.id).error


def test_a_timed_out_task_is_retried_with_backoff_until_its_attempts_run_out(runtime):
    task = runtime.state.add_tasks([Task(prompt="slow", timeout=0.3,
                                         retry=RetryPolicy(maxAttempts=2))])[0]
    execute(runtime.state, task.id, "c1", 60, _sleeper(5))
    deferred = runtime.state.get_task(task.id)
    assert deferred.status == "deferred" and deferred.attempts == 1
    assert deferred.deferUntil > utcnow()
    assert runtime.state.get_result(task.id) is None
    # not before its deferUntil
    assert execute(runtime.state, task.id, "c2", 60, _sleeper(0)).outcome == "deferred"
    assert recovery.release_deferred(runtime, utcnow()) == []
    assert recovery.release_deferred(runtime, utcnow() + timedelta(seconds=5)) == [task.id]
    runtime.state.update_task(task.id, lambda t: t.model_copy(update={"deferUntil": None}))
    execute(runtime.state, task.id, "c3", 60, _sleeper(5))
    failed = runtime.state.get_task(task.id)
    assert failed.status == "failed" and failed.attempts == 2
    assert "timed out" in runtime.state.get_result(task.id).error


def test_a_crashing_body_fails_its_task_with_the_reason(runtime):
    task = runtime.state.add_tasks([Task(prompt="buggy")])[0]

    def body(control: RunControl) -> Result:
        raise KeyError("missing")

    execute(runtime.state, task.id, "c1", 60, body)
    assert runtime.state.get_task(task.id).status == "failed"
    assert runtime.state.get_result(task.id).error == "internal error: KeyError: 'missing'"

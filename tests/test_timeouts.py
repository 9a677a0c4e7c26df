"""Task timeouts: the run stops, the task fails with a timeout error, or retries per policy."""

from __future__ import annotations

import time
from datetime import timedelta

from mimikit.lifecycle.execution import RunControl, execute
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
    task = runtime.tasks.add([Task(prompt="slow", timeout=0.3)])[0]
    began = time.monotonic()
    execute(runtime, task.id, "c1", 60, _sleeper(5))
    assert time.monotonic() - began < 2
    assert runtime.tasks.get(task.id).status == "failed"
    assert "timed out after" in runtime.tasks.result(task.id).error


def test_a_timed_out_task_is_retried_with_backoff_until_its_attempts_run_out(runtime):
    task = runtime.tasks.add([Task(prompt="slow", timeout=0.3,
                                         retry=RetryPolicy(maxAttempts=2))])[0]
    execute(runtime, task.id, "c1", 60, _sleeper(5))
    deferred = runtime.tasks.get(task.id)
    assert deferred.status == "deferred" and deferred.attempts == 1
    assert deferred.deferUntil > utcnow()
    assert runtime.tasks.result(task.id) is None
    # not before its deferUntil
    assert execute(runtime, task.id, "c2", 60, _sleeper(0)).outcome == "deferred"
    assert recovery.release_deferred(runtime, utcnow()) == []
    assert recovery.release_deferred(runtime, utcnow() + timedelta(seconds=5)) == [task.id]
    runtime.tasks.update(task.id, lambda t: t.model_copy(update={"deferUntil": None}))
    execute(runtime, task.id, "c3", 60, _sleeper(5))
    failed = runtime.tasks.get(task.id)
    assert failed.status == "failed" and failed.attempts == 2
    assert "timed out" in runtime.tasks.result(task.id).error


def test_a_crashing_body_fails_its_task_with_the_reason(runtime):
    task = runtime.tasks.add([Task(prompt="buggy")])[0]

    def body(control: RunControl) -> Result:
        raise KeyError("missing")

    execute(runtime, task.id, "c1", 60, body)
    assert runtime.tasks.get(task.id).status == "failed"
    assert runtime.tasks.result(task.id).error == "internal error: KeyError: 'missing'"

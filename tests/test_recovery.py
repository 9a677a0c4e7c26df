"""At-least-once execution: a worker killed mid-task, retries with backoff, deferUntil, restarts.

The supervisor tick runs in the test process (against the same Redis) so each pass is observed;
Worker tasks are dispatched to ``tests.stand_in_worker``, which runs the real delivery lifecycle.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta

import pytest
from processes import wait_for
from scheduling_helpers import add_trigger

from mimikit.delivery import dispatch, retry
from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, RetryPolicy, Task, utcnow
from mimikit.roles import ROLES, WORKER
from mimikit.scheduling import entries
from mimikit.supervisor import recovery
from mimikit.supervisor.tick import tick


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setitem(ROLES, "worker", replace(WORKER, task_name="tests.stand_in_worker"))


def queue_task(runtime, seconds: float, **fields) -> Task:
    return submit(runtime, [Task(prompt=f"sleep {seconds}", **fields)])[0]


def ticking(runtime, predicate, timeout: float, message: str):
    def step():
        tick(runtime)
        return predicate()

    return wait_for(step, timeout=timeout, interval=0.2, message=message)


def status(runtime, task_id: str) -> str:
    return runtime.tasks.require(task_id).status


@pytest.mark.slow
def test_task_of_a_killed_worker_is_rerun_after_its_heartbeat_expires(runtime, procs, stand_in):
    victim = procs.worker(queues="worker", name="victim")
    task = queue_task(runtime, 2.0, retry=RetryPolicy(maxAttempts=3))
    runs = runtime.keys.meta(f"runs:{task.id}")
    wait_for(lambda: status(runtime, task.id) == "running" and runtime.redis.llen(runs) == 1,
             message="the first run under way")  # "running" is kept just before it begins
    procs.kill(victim)
    killed = time.monotonic()
    procs.worker(queues="worker", name="rescuer")
    ticking(runtime, lambda: status(runtime, task.id) == "deferred", timeout=10,
            message="the lost task to be deferred")
    assert time.monotonic() - killed >= 2.0  # not before the heartbeat expired
    deferred = runtime.tasks.require(task.id)
    assert deferred.error == recovery.LOST_REASON and deferred.deferUntil > utcnow()
    ticking(runtime, lambda: status(runtime, task.id) == "done", timeout=15,
            message="the re-run to complete")
    done = runtime.tasks.require(task.id)
    assert done.attempts == 2
    assert done.startedAt >= deferred.deferUntil
    assert runtime.redis.llen(runs) == 2


@pytest.mark.slow
def test_killed_task_without_attempts_left_fails_with_the_reason(runtime, procs, stand_in):
    victim = procs.worker(queues="worker", name="victim")
    task = queue_task(runtime, 5.0, retry=RetryPolicy(maxAttempts=1))  # its only attempt
    wait_for(lambda: status(runtime, task.id) == "running", message="the run")
    procs.kill(victim)
    ticking(runtime, lambda: status(runtime, task.id) == "failed", timeout=10,
            message="the task to fail")
    failed = runtime.tasks.require(task.id)
    assert failed.error == recovery.LOST_REASON
    assert runtime.tasks.result(task.id).error == recovery.LOST_REASON
    texts = [m.text for m in runtime.conversation.recent(10)]
    assert any(recovery.LOST_REASON in text for text in texts)


def test_deferred_task_never_runs_before_defer_until(runtime, procs, stand_in):
    procs.worker(queues="worker", name="w")
    until = utcnow() + timedelta(seconds=1.5)
    task = Task(prompt="sleep 0.1", status="deferred", deferUntil=until)
    runtime.tasks.add([task])
    dispatch.enqueue(runtime, task)  # an early delivery: refused, the task stays deferred
    time.sleep(0.8)
    tick(runtime)
    assert status(runtime, task.id) == "deferred"
    ticking(runtime, lambda: status(runtime, task.id) == "done", timeout=10,
            message="the task to run after deferUntil")
    assert runtime.tasks.require(task.id).startedAt >= until


def test_startup_recovery_redispatches_queued_work_and_restores_beat_entries(
        runtime, procs, stand_in):
    orphan = Task(prompt="sleep 0.1")
    runtime.tasks.add([orphan])  # stored, but its message was never sent
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=3600))
    entries.delete_entry(trigger.id)
    procs.worker(queues="worker", name="w")
    report = recovery.recover_on_startup(runtime)
    assert report["restored"] == [trigger.id] and entries.entry_exists(trigger.id)
    wait_for(lambda: status(runtime, orphan.id) == "done", message="the orphan to run")


def test_backoff_doubles_up_to_a_cap():
    assert [retry.backoff_seconds(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert retry.backoff_seconds(50) == retry.BACKOFF_MAX_SECONDS

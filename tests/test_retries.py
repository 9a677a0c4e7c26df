"""Retries by default: a task whose worker died runs again (``MIMIKIT_RETRY_MAX_ATTEMPTS``, 3,
unless the task sets ``retry.maxAttempts``), and each attempt, with how it ended and why, is
shown by ``mimikit task show`` and ``GET /api/tasks/ID``.

Real processes: redis-server, Celery workers and beat, the real Worker agent, the scripted LLM.
"""

from __future__ import annotations

import time

import pytest
from fault_helpers import wait_until, worker_answers_after
from processes import run_mimikit

from mimikit.lifecycle.submit import submit
from mimikit.models import Task
from mimikit.supervisor.recovery import LOST_REASON

pytestmark = pytest.mark.slow


def _running(runtime, task: Task) -> bool:
    return runtime.tasks.require(task.id).status == "running"


def test_a_task_whose_worker_was_killed_runs_again_and_its_attempts_are_shown(
        wired, procs, llm, figures):
    from mimikit.web import create_app

    runtime = wired
    llm.default("worker", worker_answers_after(3))
    procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    procs.beat()
    victim = procs.worker(queues="worker", concurrency=4, name="victim")
    task = submit(runtime, [Task(prompt="a long job")])[0]  # no retry policy of its own
    wait_until(lambda: _running(runtime, task) and llm.requests_for("worker"), 30, "the run")
    procs.kill(victim)  # kill -9 of the worker, mid-run
    killed = time.monotonic()
    procs.worker(queues="worker", concurrency=4, name="rescuer")
    done = wait_until(lambda: runtime.tasks.require(task.id).status == "done", 60,
                      "the task to run again and finish")
    figures.record("task of a killed worker, default retry policy",
                   done_after_kill_s=round(time.monotonic() - killed, 1),
                   waited_s=round(done, 1))
    detail = create_app(runtime.settings).test_client().get(f"/api/tasks/{task.id}").get_json()
    attempts = detail["attempts"]
    assert (attempts["used"], attempts["max"]) == (2, 3)
    first, second = attempts["history"]
    assert (first["attempt"], first["outcome"], first["reason"]) == (1, "to be retried",
                                                                     LOST_REASON)
    assert (second["attempt"], second["outcome"]) == (2, "done")
    shown = run_mimikit("task", "show", task.id)
    assert shown.returncode == 0, shown.stderr
    assert "attempts: 2 of 3" in shown.stdout
    assert f"#1  {first['startedAt']}  to be retried: {LOST_REASON}" in shown.stdout


def test_the_instance_setting_is_the_default_policy_and_a_task_may_set_its_own(
        wired, procs, llm, monkeypatch):
    runtime = wired
    monkeypatch.setenv("MIMIKIT_RETRY_MAX_ATTEMPTS", "1")  # for the supervisor's workers
    llm.default("worker", worker_answers_after(3))
    procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    procs.beat()
    victim = procs.worker(queues="worker", concurrency=4, name="victim")
    plain, own = submit(runtime, [Task(prompt="plain job"),
                                  Task(prompt="own policy", retry={"maxAttempts": 2})])
    wait_until(lambda: _running(runtime, plain) and _running(runtime, own), 30, "both runs")
    procs.kill(victim)
    procs.worker(queues="worker", concurrency=4, name="rescuer")
    wait_until(lambda: runtime.tasks.require(plain.id).status == "failed"
               and runtime.tasks.require(own.id).status == "done", 60, "both to end")
    assert runtime.tasks.result(plain.id).error == LOST_REASON
    assert runtime.tasks.require(own.id).attempts == 2

"""An LLM outage is waited out: Planner and Worker tasks whose model stays away (5xx, 429,
unreachable) are deferred without using an attempt, shown as waiting for the model since the
outage began, and finish once it answers; a refusal that will not change (a bad key) fails the
task at once, with the fix.

Real processes: redis-server, Celery workers and beat (the supervisor tick releases deferred
tasks), the real agents, the scripted LLM over HTTP.
"""

from __future__ import annotations

import time

import pytest
from fault_helpers import wait_until
from llm_server import error, tool_call
from processes import run_mimikit

from mimikit.lifecycle.submit import submit
from mimikit.models import Task
from mimikit.status import status
from mimikit.summaries import task_summary

pytestmark = pytest.mark.slow
OUTAGE_SECONDS = 8.0
BACKOFF_CAP_SECONDS = 2


def _down_until(moment: list[float], answer: dict) -> object:
    """The model answers HTTP 503 until ``moment[0]`` (``time.monotonic()``), then ``answer``."""
    return lambda _body: error(503) if time.monotonic() < moment[0] else answer


def test_an_outage_defers_tasks_without_using_attempts_and_they_finish_when_it_ends(
        wired, procs, llm, monkeypatch, figures):
    runtime = wired
    monkeypatch.setenv("MIMIKIT_LLM_OUTAGE_BACKOFF_MAX", str(BACKOFF_CAP_SECONDS))
    back = [time.monotonic() + 3600]
    done = {"status": "done", "resultType": "text", "result": {"text": "finished"}}
    llm.default("worker", _down_until(back, tool_call("submit_result", **done)))
    llm.default("planner", _down_until(back, tool_call("submit_result", **done)))
    procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    procs.beat()
    procs.worker(queues="planner,worker", concurrency=8, name="tasks")
    back[0] = time.monotonic() + OUTAGE_SECONDS
    tasks = submit(runtime, [Task(prompt=f"job {n}") for n in range(4)]
                   + [Task(role="planner", prompt="plan something")])
    ids = [t.id for t in tasks]

    def waiting() -> list[Task]:
        return [t for t in runtime.tasks.by_id(ids)
                if t.status == "deferred" and t.waitingSince is not None]

    wait_until(lambda: len(waiting()) == len(ids), OUTAGE_SECONDS, "every task to wait")
    for task in runtime.tasks.by_id(ids):
        assert task.attempts == 0, task  # waiting uses no attempt
        assert "waiting for the model" in task.error and "HTTP 503" in task.error
        shown = task_summary(task)
        assert (shown["waitingFor"], shown["since"]) == ("model", task.waitingSince.isoformat())
    report = status(runtime)["llm"]["waitingTasks"]
    assert report["count"] == len(ids)
    printed = run_mimikit("status").stdout
    assert f"{len(ids)} task(s) waiting for the model since" in printed, printed
    finished = wait_until(lambda: all(t.status == "done" for t in runtime.tasks.by_id(ids)),
                          OUTAGE_SECONDS + 30, "every task to finish once the model is back")
    after_back = time.monotonic() - back[0]
    tries = {t.id: sum(1 for e in runtime.tasks.log_of(t.id)
                       if e["type"] == "task_waiting_for_model") for t in tasks}
    figures.record(f"LLM answering 503 for {OUTAGE_SECONDS:g} s, backoff cap "
                   f"{BACKOFF_CAP_SECONDS} s", tasks=len(ids), all_done_s=round(finished, 1),
                   done_after_model_back_s=round(after_back, 1),
                   waits_per_task=sorted(tries.values()))
    assert after_back < BACKOFF_CAP_SECONDS + 6
    assert all(t.attempts == 1 and t.waitingSince is None for t in runtime.tasks.by_id(ids))
    assert all(n >= 2 for n in tries.values())  # tried again and again meanwhile
    assert status(runtime)["llm"].get("waitingTasks") is None


def test_a_rejected_api_key_fails_the_task_at_once_with_the_fix(wired, procs, llm):
    runtime = wired
    llm.default("worker", error(401))
    procs.worker(queues="worker", concurrency=2, name="tasks")
    task = submit(runtime, [Task(prompt="do it")])[0]
    took = wait_until(lambda: runtime.tasks.require(task.id).status == "failed", 15,
                      "the task to fail")
    failed = runtime.tasks.require(task.id)
    error_text = runtime.tasks.result(task.id).error
    assert "rejected the API key" in error_text and "set MIMIKIT_LLM_API_KEY" in error_text
    assert failed.waitingSince is None and failed.attempts == 1
    assert len(llm.requests_for("worker")) == 1 and took < 10

"""A Planner or Worker task never costs more than its attempts: each attempt at most its step
limit of LLM calls, and a task whose attempts made that many is not run again.

Real processes: redis-server, Celery workers and beat (releasing deferred attempts), the real
Worker agent, the scripted LLM.
"""

from __future__ import annotations

import pytest
from fault_helpers import wait_until
from llm_server import text

from mimikit.lifecycle.spent import call_cap
from mimikit.lifecycle.submit import submit
from mimikit.models import RetryPolicy, Task, Usage
from mimikit.spending import book


def _calls(runtime, task: Task) -> int:
    return int(book.totals(runtime, "task", task.id)["calls"])


@pytest.mark.slow
def test_a_task_that_fails_the_same_way_every_attempt_costs_at_most_its_attempts(
        wired, procs, llm, figures):
    runtime = wired
    llm.default("worker", text(""))  # an empty answer, every time
    procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    procs.beat()
    procs.worker(queues="worker", concurrency=2, name="tasks")
    task = submit(runtime, [Task(prompt="tidy the notes", retry=RetryPolicy(maxAttempts=3))])[0]
    wait_until(lambda: runtime.tasks.require(task.id).status == "failed", 60,
               "the task to fail after its attempts")
    ended = runtime.tasks.require(task.id)
    asked = len(llm.requests_for("worker"))
    figures.record("Worker task answered empty every time, 3 attempts", attempts=ended.attempts,
                   llm_requests=asked, cap=call_cap(runtime, ended))
    assert ended.attempts == 3 and "could not be used" in runtime.tasks.result(task.id).error
    assert asked == _calls(runtime, task) <= call_cap(runtime, ended)
    assert asked <= 3 * runtime.settings.max_steps_for("worker")


def test_a_task_whose_attempts_made_their_most_calls_fails_without_asking_the_model(
        wired, procs, llm):
    runtime = wired
    task = Task(prompt="summarize the logs", retry=RetryPolicy(maxAttempts=2))
    spender = book.Spender(role="worker", model="worker", task=task.id)
    for _ in range(call_cap(runtime, task)):  # as if earlier attempts had made them all
        book.record(runtime, spender, Usage(promptTokens=10, completionTokens=2,
                                            totalTokens=12), None)
    procs.worker(queues="worker", concurrency=1, name="tasks")
    submit(runtime, [task])
    wait_until(lambda: runtime.tasks.require(task.id).status == "failed", 20, "the task to fail")
    error = runtime.tasks.result(task.id).error
    assert f"it made {call_cap(runtime, task)} LLM calls" in error and "retry.maxAttempts" in error
    assert llm.requests_for("worker") == []

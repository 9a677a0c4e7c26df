"""Runs made for waiting: on the workers ``mimikit up`` runs (the threads pool, its queues and
concurrency), LLM-bound Worker runs wait side by side instead of three at a time, and the
Teller keeps answering while every Planner and Worker slot is busy.

Real processes: redis-server, Celery workers started with the arguments of ``mimikit up``'s
children, the real agents, the scripted LLM over HTTP with real latency.
"""

from __future__ import annotations

import time

import pytest
from fault_helpers import Background, wait_until
from llm_server import delay, hang, steps, text, tool_call

from mimikit.conversation.input import post_input
from mimikit.launcher import children_for
from mimikit.lifecycle.submit import submit
from mimikit.models import Task

pytestmark = pytest.mark.slow
TASKS = 24
CALL_SECONDS = 2.0
CALLS = 2


def _as_up_runs(procs, settings, child: str):
    """Start the Celery worker that ``mimikit up`` runs as ``child``: its queues, its
    concurrency, the threads pool (``mimikit worker``'s default, as ``procs.worker``'s)."""
    argv = next(c.argv for c in children_for(settings) if c.name == child)
    queues, concurrency = argv[argv.index("--queues") + 1], argv[argv.index("--concurrency") + 1]
    return procs.worker(queues=queues, concurrency=int(concurrency), name=child)


class InFlight(Background):
    """The most tasks running at once, sampled every 20 ms."""

    def __init__(self, runtime) -> None:
        super().__init__()
        self.runtime = runtime
        self.most = 0

    def _run(self) -> None:
        key = self.runtime.keys.status("running")
        while not self._stop.wait(0.02):
            self.most = max(self.most, self.runtime.redis.scard(key))


def test_24_slow_worker_tasks_run_side_by_side_on_the_default_task_worker(wired, procs, llm,
                                                                          figures):
    runtime = wired
    llm.default("worker", steps(delay(CALL_SECONDS, tool_call("list_files", path=".")),
                                delay(CALL_SECONDS, tool_call(
                                    "submit_result", status="done", resultType="text",
                                    result={"text": "listed"}))))
    _as_up_runs(procs, runtime.settings, "worker-tasks")
    sampler = InFlight(runtime).start()
    began = time.monotonic()
    tasks = submit(runtime, [Task(prompt=f"list the files, job {n}") for n in range(TASKS)])
    took = wait_until(lambda: all(t.status == "done" for t in runtime.tasks.by_id(
        [t.id for t in tasks])), 90, "every task")
    sampler.stop()
    serial = TASKS * CALLS * CALL_SECONDS
    figures.record(f"{TASKS} Worker tasks, {CALLS} LLM calls of {CALL_SECONDS:g} s each",
                   seconds=round(took, 1), serial_s=serial, three_at_a_time_s=serial / 3,
                   side_by_side_s=CALLS * CALL_SECONDS, most_in_flight=sampler.most,
                   since_submit_s=round(time.monotonic() - began, 1))
    assert sampler.most >= 20
    assert took < serial / 4  # three at a time would take serial / 3


def test_the_teller_answers_within_seconds_while_every_task_slot_is_busy(wired, procs, llm,
                                                                          figures):
    runtime = wired
    slots = runtime.settings.concurrency
    llm.default("worker", hang(120))
    llm.default("planner", hang(120))
    llm.default("teller", text("Still here."))
    _as_up_runs(procs, runtime.settings, "worker-tasks")
    _as_up_runs(procs, runtime.settings, "worker-agents")
    submit(runtime, [Task(role="planner", prompt=f"plan {n}") for n in range(4)]
           + [Task(prompt=f"job {n}") for n in range(slots)])
    wait_until(lambda: runtime.redis.scard(runtime.keys.status("running")) == slots, 60,
               f"all {slots} task slots to be busy")
    assert runtime.redis.scard(runtime.keys.status("queued")) == 4  # more than the slots
    post_input(runtime, "are you still there?")
    answered = wait_until(lambda: any(m.text == "Still here."
                                      for m in runtime.conversation.recent(5)), 30,
                          "the Teller's answer")
    figures.record("the Teller while every task slot is busy", task_slots=slots,
                   busy=runtime.redis.scard(runtime.keys.status("running")),
                   answered_after_s=round(answered, 2))
    assert answered < 5
    assert runtime.redis.scard(runtime.keys.status("running")) == slots  # still all busy

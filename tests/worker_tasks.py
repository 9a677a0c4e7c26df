"""Celery tasks used only by tests; importable by worker processes (``-A worker_app``)."""

from __future__ import annotations

import os
import time

from mimikit.celery_app import app
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.models import Result
from mimikit.store.runtime import get_runtime


@app.task(name="tests.record", acks_late=True)
def record(label: str, seconds: float = 0.0) -> str:
    """Append ``label`` to a Redis list when it starts, then sleep."""
    runtime = get_runtime()
    runtime.redis.rpush(runtime.keys.meta("started"), label)
    time.sleep(seconds)
    return label


@app.task(name="tests.slow_task", bind=True, acks_late=True)
def slow_task(self, task_id: str, seconds: float) -> str:  # type: ignore[no-untyped-def]
    """A task run through Mimikit's delivery lifecycle: claims, heartbeats, completes."""
    return _stand_in(self, task_id, seconds)


@app.task(name="tests.stand_in_worker", bind=True, acks_late=True)
def stand_in_worker(self, task_id: str) -> str:  # type: ignore[no-untyped-def]
    """Stands in for ``mimikit.worker`` (same arguments): sleeps the seconds its prompt names
    (``"sleep 2"``), through the real delivery lifecycle."""
    runtime = get_runtime()
    seconds = float(runtime.tasks.require(task_id).prompt.split()[-1])
    return _stand_in(self, task_id, seconds)


def _stand_in(task, task_id: str, seconds: float) -> str:  # type: ignore[no-untyped-def]
    runtime = get_runtime()

    def body(control: RunControl) -> Result:
        runtime.redis.rpush(runtime.keys.meta(f"runs:{task_id}"), str(os.getpid()))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            control.check()
            time.sleep(0.05)
        runtime.redis.incr(runtime.keys.meta(f"completed:{task_id}"))
        return Result(id=task_id, status="done", result={"text": "slept"},
                      attempts=control.task.attempts)

    return execute(runtime, task_id, task.request.id, 60, body).outcome

"""Tasks waiting for the LLM to come back.

A run whose LLM stays away past the client's retries (unreachable, 5xx, 429) does not fail its
task: the task is deferred without using an attempt, marked as waiting for the model since the
outage began (``waitingSince``: the task panel and ``mimikit status`` show it), and tried again
after a wait that doubles up to ``MIMIKIT_LLM_OUTAGE_BACKOFF_MAX``. The first answer a run gets
ends its task's wait and brings the other waiting tasks forward.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from mimikit.delivery.retry import outage_wait_seconds
from mimikit.exceptions import NotFound
from mimikit.models import Task, utcnow
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.waiting")
BRING_FORWARD_EVERY_SECONDS = 5  # the waiting tasks are brought forward at most this often


def wait_for_model(runtime: Runtime, task: Task, reason: str) -> Task | None:
    """Defer the running ``task`` until the LLM may be back, giving back its attempt.

    Returns the deferred task; None when this delivery no longer holds it (finished, or taken
    over meanwhile).
    """
    now = utcnow()
    cap = runtime.settings.llm_outage_backoff_max

    def change(current: Task) -> Task | None:
        if current.status != "running" or current.celeryId != task.celeryId:
            return None
        since = current.waitingSince or now
        wait = outage_wait_seconds((now - since).total_seconds(), cap)
        current.status, current.deferUntil = "deferred", now + timedelta(seconds=wait)
        current.waitingSince, current.error = since, f"waiting for the model: {reason}"
        current.attempts = max(current.attempts - 1, 0)
        return current

    def note(pipe: Any, before: Task, after: Task) -> None:
        pipe.delete(runtime.keys.heartbeat(task.id))
        pipe.log(runtime.keys, "task_waiting_for_model", taskId=task.id, traceId=task.traceId,
                 attempts=after.attempts, reason=reason, since=_iso(after.waitingSince),
                 deferUntil=_iso(after.deferUntil))

    deferred = runtime.tasks.update(task.id, change, note)
    if deferred is not None:
        log.warning("task %s waits for the model until %s: %s", task.id,
                    _iso(deferred.deferUntil), reason)
    return deferred


def model_answered(runtime: Runtime, task: Task) -> None:
    """A run of ``task`` got an answer: its wait for the model (if any) is over, and the other
    tasks waiting for it are brought forward."""
    if task.waitingSince is not None:

        def change(current: Task) -> Task | None:
            if current.waitingSince is None:
                return None
            current.waitingSince, current.error = None, None
            return current

        def note(pipe: Any, before: Task, after: Task) -> None:
            pipe.log(runtime.keys, "task_model_back", taskId=task.id, traceId=task.traceId,
                     since=_iso(before.waitingSince))

        runtime.tasks.update(task.id, change, note)
        task.waitingSince = None
    bring_forward(runtime)


def bring_forward(runtime: Runtime) -> list[str]:
    """Let every task deferred for the model run at the next tick (at most every
    ``BRING_FORWARD_EVERY_SECONDS``); returns their ids."""
    redis, keys = runtime.redis, runtime.keys
    if not redis.zcard(keys.waiting_for_model):
        return []
    if not redis.set(keys.meta("waiting_brought_forward"), "1", nx=True,
                     ex=BRING_FORWARD_EVERY_SECONDS):
        return []
    now = utcnow()
    moved = []
    for task_id in (as_text(i) for i in redis.zrange(keys.waiting_for_model, 0, -1)):

        def change(current: Task) -> Task | None:
            if current.status != "deferred" or current.waitingSince is None:
                return None
            current.deferUntil = now
            return current

        try:
            if runtime.tasks.update(task_id, change) is not None:
                moved.append(task_id)
        except NotFound:  # gone under retention meanwhile
            continue
    return moved


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None

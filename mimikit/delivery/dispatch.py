"""Putting work on the Celery queues (Teller runs, Planner and Worker tasks), and reading how
much waits there.

Results live in the state store, never in Celery's result backend: tasks are sent with
``ignore_result``, so sending one does not subscribe to its result and a worker stores none.
"""

from __future__ import annotations

from mimikit.celery_app import app
from mimikit.delivery.queues import QUEUES, SYSTEM_PRIORITY, queue_keys, to_broker_priority
from mimikit.models import Task
from mimikit.roles import TELLER, role
from mimikit.store.runtime import Runtime

# Runs stop themselves at their deadline (``lifecycle.execution``); Celery's time limits, which
# only a prefork pool enforces, are a last resort beyond it.
SOFT_LIMIT_MARGIN_SECONDS = 30
TIME_LIMIT_MARGIN_SECONDS = 120


def warm_sending() -> None:
    """Ready this process to send its first task at the cost of later ones, sending nothing:
    the Celery app finalized, its router and result backend built, a broker connection open
    in the producer pool with the queues declared on it, and the event dispatcher each send's
    "task-sent" event goes through (per process: call it after a fork)."""
    app.finalize(auto=True)
    _ = app.backend, app.amqp.router
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=1)
        for queue in app.amqp.queues.values():
            producer.maybe_declare(queue)
        producer.maybe_declare(app.events.Dispatcher(enabled=False).exchange)


# A Teller delivery runs passes for at most ``TELLER_DELIVERY_PASSES`` pass times (each its
# tries of ``MIMIKIT_TELLER_TIMEOUT``); Celery's time limit stands behind that.
TELLER_DELIVERY_PASSES = 4


def send_teller(pass_seconds: float) -> None:
    """Enqueue one Teller run (callers go through ``conversation.gate.wake``); Celery stops
    it if it runs longer than ``TELLER_DELIVERY_PASSES`` passes of ``pass_seconds`` (plus a
    margin), where its pool can."""
    limit = pass_seconds * TELLER_DELIVERY_PASSES
    app.send_task(TELLER.task_name, queue=TELLER.queue, priority=to_broker_priority(10),
                  ignore_result=True, soft_time_limit=limit + SOFT_LIMIT_MARGIN_SECONDS,
                  time_limit=limit + TIME_LIMIT_MARGIN_SECONDS)


def enqueue(runtime: Runtime, task: Task) -> str:
    """Send a queued Planner/Worker task to its Celery queue; returns the Celery task id."""
    timeout = task.timeout or runtime.settings.timeout_for(task.role)
    priority = SYSTEM_PRIORITY if task.role == "llm_eval" else to_broker_priority(task.priority)
    result = app.send_task(
        role(task.role).task_name, args=[task.id], priority=priority,
        soft_time_limit=timeout + SOFT_LIMIT_MARGIN_SECONDS,
        time_limit=timeout + TIME_LIMIT_MARGIN_SECONDS,
        headers={"traceId": task.traceId}, ignore_result=True,
    )
    return str(result.id)


def queue_depths(runtime: Runtime) -> dict[str, int]:
    """Messages waiting in each Celery queue (all priority levels)."""
    pipe = runtime.redis.pipeline(transaction=False)
    for queue in QUEUES:
        for key in queue_keys(queue, runtime.settings.key_prefix):
            pipe.llen(key)
    counts = iter(pipe.execute())
    levels = len(queue_keys(QUEUES[0], runtime.settings.key_prefix))
    return {queue: sum(next(counts) for _ in range(levels)) for queue in QUEUES}

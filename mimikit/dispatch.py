"""Putting work on the Celery queues: Teller wakes, Planner and Worker tasks."""

from __future__ import annotations

from typing import Any

from mimikit.models import Message, Task
from mimikit.priority import SYSTEM_PRIORITY, to_broker_priority
from mimikit.runtime import Runtime
from mimikit.teller_gate import wake_teller

TASK_NAMES = {"planner": "mimikit.planner", "worker": "mimikit.worker",
              "llm_eval": "mimikit.llm_eval_batch"}
SOFT_LIMIT_MARGIN_SECONDS = 30
TIME_LIMIT_MARGIN_SECONDS = 120


def _app() -> Any:
    from mimikit.celery_app import app

    return app


def send_teller() -> None:
    """Enqueue one Teller run (callers go through ``wake``)."""
    _app().send_task("mimikit.teller", queue="teller", priority=to_broker_priority(10))


def wake(runtime: Runtime) -> bool:
    """Ask for a Teller run; coalesced with any run already queued or running."""
    return wake_teller(runtime, send_teller)


def post_input(runtime: Runtime, text: str) -> Message:
    """A user message: into history and the Teller's inbox, then a Teller wake.

    Its id is also its trace id, which follows it through every run and task it causes.
    """
    message = Message(role="user", text=text)
    message.traceId = message.id
    runtime.state.append_message(message, to_inbox=True)
    runtime.state.log("input_received", messageId=message.id, traceId=message.id)
    wake(runtime)
    return message


def enqueue(runtime: Runtime, task: Task) -> str:
    """Send a queued Planner/Worker task to its Celery queue; returns the Celery task id."""
    timeout = task.timeout or runtime.settings.timeout_for(task.role)
    priority = SYSTEM_PRIORITY if task.role == "llm_eval" else to_broker_priority(task.priority)
    result = _app().send_task(
        TASK_NAMES[task.role], args=[task.id], priority=priority,
        soft_time_limit=timeout + SOFT_LIMIT_MARGIN_SECONDS,
        time_limit=timeout + TIME_LIMIT_MARGIN_SECONDS,
        headers={"traceId": task.traceId},
    )
    return str(result.id)

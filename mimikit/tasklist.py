"""Listing and canceling tasks: shared by the ``list_tasks``/``cancel_task`` tools, the API and
the CLI."""

from __future__ import annotations

import logging
from typing import Any, Literal

from mimikit.models import Task
from mimikit.runtime import Runtime
from mimikit.state import summarize

log = logging.getLogger("mimikit.tasklist")
Scope = Literal["queue", "running", "triggers", "all"]
SCOPES = ("queue", "running", "triggers", "all")
RECENT_FINISHED = 50


def list_tasks(runtime: Runtime, scope: str = "all", role: str | None = None,
               include_finished: bool = False) -> list[dict[str, Any]]:
    """TaskSummaries for ``scope`` (queue / running / triggers / all), optionally by role."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    state = runtime.state
    tasks: list[Task] = []
    if scope in ("queue", "all"):
        tasks += [t for t in state.tasks_with_status("queued", "deferred") if not t.is_trigger]
    if scope in ("running", "all"):
        tasks += state.tasks_with_status("running")
    if scope in ("triggers", "all"):
        tasks += state.triggers()
    if include_finished and scope == "all":
        finished = state.tasks_with_status("done", "failed", "canceled")
        finished = [t for t in finished if not t.is_trigger or t.status != "queued"]
        finished.sort(key=lambda t: t.completedAt or t.createdAt, reverse=True)
        tasks += finished[:RECENT_FINISHED]
    if role:
        tasks = [t for t in tasks if t.role == role]
    seen: set[str] = set()
    unique = [t for t in tasks if not (t.id in seen or seen.add(t.id))]  # type: ignore[func-returns-value]
    return [summarize(t) for t in unique]


def cancel_task(runtime: Runtime, task_id: str, *, stop_running: bool,
                source: str = "user") -> tuple[bool, str]:
    """Cancel a queued task or a trigger; with ``stop_running`` also a running task.

    Returns ``(success, message)``; the message says why when it did not succeed.
    """
    state = runtime.state
    task = state.get_task(task_id)
    if task is None:
        return False, f"no task with id {task_id!r}; call list_tasks to see the ids"
    if task.finished:
        return False, f"task {task_id} already finished ({task.status})"
    if task.status == "running" and not stop_running:
        return False, f"task {task_id} is running; only queued tasks and triggers can be canceled"
    current = state.request_cancel(task_id, reason=f"canceled by {source}")
    if current is None:
        return False, f"task {task_id} already finished"
    if task.is_trigger:
        from mimikit.triggers import unschedule

        unschedule(runtime, task)
    if current.status == "running" and current.celeryId:
        _revoke(current.celeryId)
    label = task.title or task.prompt[:60]
    state.system_message(f"Task canceled: {label} ({task_id})", taskId=task_id,
                         traceId=task.traceId)
    state.push_inbox({"kind": "notice", "taskId": task_id, "traceId": task.traceId,
                      "text": f"task {task_id} was canceled by the {source}"})
    return True, "canceled"


def _revoke(celery_id: str) -> None:
    from mimikit.celery_app import app

    # SIGUSR1 raises SoftTimeLimitExceeded inside the task, which stops its subprocesses and
    # records the cancel; the flag in Redis covers a task between two deliveries.
    app.control.revoke(celery_id, terminate=True, signal="SIGUSR1")

"""Canceling a task: shared by the ``cancel_task`` tool, the API and the CLI."""

from __future__ import annotations

from mimikit.delivery.dispatch import revoke
from mimikit.scheduling.triggers import unschedule
from mimikit.store.runtime import Runtime


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
        unschedule(runtime, task)
    if current.status == "running" and current.celeryId:
        revoke(current.celeryId)
    label = task.title or task.prompt[:60]
    state.system_message(f"Task canceled: {label} ({task_id})", taskId=task_id,
                         traceId=task.traceId)
    state.push_inbox({"kind": "notice", "taskId": task_id, "traceId": task.traceId,
                      "text": f"task {task_id} was canceled by the {source}"})
    return True, "canceled"

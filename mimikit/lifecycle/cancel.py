"""Canceling a task: shared by the ``cancel_task`` tool, the API and the CLI.

A queued or deferred task, or a trigger, ends at once through the completion pipeline (its
dependents that can no longer fire are retired, the person is told). A running one is asked to
stop: the heartbeat thread of its delivery sees the request within a second and stops the run
(its shell and codex processes killed, its LLM request cut short, ``lifecycle.execution``),
which then records the cancel the same way. This works on every Celery pool.
"""

from __future__ import annotations

from mimikit.lifecycle.event import Completion, canceled_by
from mimikit.lifecycle.pipeline import finish
from mimikit.store.runtime import Runtime


def cancel_task(runtime: Runtime, task_id: str, *, stop_running: bool,
                source: str = "user") -> tuple[bool, str]:
    """Cancel a queued task or a trigger; with ``stop_running`` also a running task.

    Returns ``(success, message)``; the message says why when it did not succeed.
    """
    tasks = runtime.tasks
    task = tasks.get(task_id)
    if task is None:
        return False, f"no task with id {task_id!r}; call list_tasks to see the ids"
    if task.finished:
        return False, f"task {task_id} already finished ({task.status})"
    if task.status == "running" and not stop_running:
        return False, f"task {task_id} is running; only queued tasks and triggers can be canceled"
    reason = canceled_by(source)
    current = tasks.request_cancel(task_id, reason)
    if current is None:
        return False, f"task {task_id} already finished"
    if current.status == "running":
        return True, "canceled"
    if finish(runtime, Completion(task=current, canceled=reason)) is None:
        return False, f"task {task_id} already finished"
    return True, "canceled"

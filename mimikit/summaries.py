"""How a task is shown: the TaskSummary of the API, the page's task panel and ``list_tasks``.

Presentation only; the stores publish it with each change of a task (see ``store.tasks``).
"""

from __future__ import annotations

from typing import Any

from mimikit.models import Task


def task_summary(task: Task) -> dict[str, Any]:
    """The TaskSummary of ``task`` (its prompt cut to 100 characters).

    ``status`` is what a person reads: a trigger that is not finished shows ``trigger`` (or
    ``paused``), a Planner task that ended needing the person's answer ``needs_input``, and a
    task waiting for the model to come back says so in ``waitingFor`` and ``since``.
    """
    summary: dict[str, Any] = {
        "id": task.id, "type": task.type, "role": task.role, "title": task.title,
        "prompt": task.prompt[:100], "priority": task.priority, "status": _shown_status(task),
        "createdAt": task.createdAt.isoformat(), "attempts": task.attempts,
    }
    schedule = task.schedule
    next_run = getattr(schedule, "nextRunAt", None) or getattr(schedule, "runAt", None)
    if next_run:
        summary["nextRunAt"] = next_run.isoformat()
    if task.catchUp:
        summary["catchUp"] = True
    summary.update(triggerId=task.triggerId, pausedReason=task.pausedReason if task.paused else None,
                   error=task.error[:300] if task.error else None,
                   reason=task.error[:300] if task.error and task.status == "canceled" else None,
                   completedAt=task.completedAt.isoformat() if task.completedAt else None)
    if task.waitingSince is not None and task.status in ("deferred", "queued"):
        # while it runs again it is trying the model, not waiting for it
        summary.update(waitingFor="model", since=task.waitingSince.isoformat())
    return {k: v for k, v in summary.items() if v is not None}


def _shown_status(task: Task) -> str:
    if task.is_trigger and not task.finished:
        return "paused" if task.paused else "trigger"
    if task.status == "done" and task.outcome == "needs_input":
        return "needs_input"
    return task.status

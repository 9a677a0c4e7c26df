"""How a task is shown: the TaskSummary of the API, the page's task panel and ``list_tasks``.

Presentation only; the stores publish it with each change of a task (see ``store.tasks``).
"""

from __future__ import annotations

import json
from typing import Any

from mimikit.models import IntervalSchedule, RunAtSchedule, Task

CONDITION_CHARS = 120  # of a condition shown as JSON


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


def timing_words(task: Task) -> str:
    """When a task runs, in few words after a space: " at 2026-11-27 16:19 UTC", " cron
    0 9 * * * UTC", " every 30 minutes", a condition as JSON ('' for a task run now)."""
    schedule = task.schedule
    if isinstance(schedule, RunAtSchedule):
        return f" at {schedule.runAt:%Y-%m-%d %H:%M %Z}"
    if isinstance(schedule, IntervalSchedule):
        if schedule.cron is not None:
            return f" cron {schedule.cron} {schedule.timezone or 'UTC'}"
        return f" every {interval_words(schedule.interval or 0)}"
    if task.condition is not None:
        return f" {json.dumps(task.condition.model_dump(mode='json'))[:CONDITION_CHARS]}"
    return ""


def interval_words(seconds: float) -> str:
    """An interval as a person says it: "2 hours", "hour", "30 minutes", "45 s" (the 1.5B
    model, shown "recurring every 7200 s", left that reminder out of "what reminders do I
    have?")."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}s"
    return f"{seconds:g} s"

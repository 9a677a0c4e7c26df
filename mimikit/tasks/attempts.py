"""The attempts of a task, read from its log: when each began, how it ended, and why.

A delivery that starts a run counts an attempt (``task_started``); it ends done, failed,
canceled, to be retried (its worker died, or its run failed under a retry policy), or waiting
for the model, which gives the attempt back. ``GET /api/tasks/ID`` and ``mimikit task show``
list them beside the task's retry policy.
"""

from __future__ import annotations

from typing import Any

from mimikit.delivery.retry import max_attempts
from mimikit.models import Task

ENDINGS = {
    "task_done": "done",
    "task_needs_input": "needs input",
    "task_failed": "failed",
    "task_canceled": "canceled",
    "task_retry_scheduled": "to be retried",
    "task_deferred": "to be retried",
    "task_waiting_for_model": "waiting for the model (not counted)",
}


def attempt_history(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per run of the task, oldest first: ``attempt`` (its number), ``startedAt``,
    ``owner`` (host:pid:delivery), and once it ended ``endedAt``, ``outcome`` and ``reason``."""
    history: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("type")
        if kind == "task_started":
            history.append({"attempt": event.get("attempts"), "startedAt": event.get("at"),
                            "owner": event.get("owner")})
        elif kind in ENDINGS and history and "outcome" not in history[-1]:
            reason = event.get("reason") or event.get("error")
            history[-1].update(endedAt=event.get("at"), outcome=ENDINGS[kind],
                               **({"reason": reason} if reason else {}))
    return history


def attempts_view(task: Task, events: list[dict[str, Any]], default_attempts: int
                  ) -> dict[str, Any]:
    """``{used, max, history}``: the attempts used, how many the task may use, each run."""
    return {"used": task.attempts, "max": max_attempts(task, default_attempts),
            "history": attempt_history(events)}

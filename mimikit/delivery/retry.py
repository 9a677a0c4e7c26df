"""The retry policy: how many attempts a task gets and how long it waits before the next one.

A task whose run failed, or whose worker died, runs again after an exponential backoff (through
``deferUntil``, status ``deferred``) while ``attempts < retry.maxAttempts``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from mimikit.models import Task

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 600.0


def backoff_seconds(attempts: int) -> float:
    """The wait before retry number ``attempts`` (1 s, 2 s, 4 s ... up to 10 minutes)."""
    return float(min(BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0), BACKOFF_MAX_SECONDS))


def may_retry(task: Task) -> bool:
    """True while the task has attempts left under its retry policy (one attempt by default)."""
    limit = task.retry.maxAttempts if task.retry else 1
    return task.attempts < limit


def next_attempt_at(task: Task, now: datetime) -> datetime:
    """When the next attempt of ``task`` may start."""
    return now + timedelta(seconds=backoff_seconds(task.attempts))

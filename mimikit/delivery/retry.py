"""The retry policy: how many attempts a task gets and how long it waits before the next one.

A task whose worker died runs again after an exponential backoff (through ``deferUntil``,
status ``deferred``) while ``attempts < retry.maxAttempts`` (``MIMIKIT_RETRY_MAX_ATTEMPTS``
when the task sets none); a task whose run failed, only when the task itself asks for
attempts. A task waiting for the LLM to come back uses no attempt: it waits as long as it has
waited so far (so the waits double), up to a cap.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from mimikit.models import Task

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 600.0
OUTAGE_FIRST_WAIT_SECONDS = 5.0


def backoff_seconds(attempts: int) -> float:
    """The wait before retry number ``attempts`` (1 s, 2 s, 4 s ... up to 10 minutes)."""
    return float(min(BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0), BACKOFF_MAX_SECONDS))


def max_attempts(task: Task, default: int = 1) -> int:
    """The attempts ``task`` may use: its own ``retry.maxAttempts``, else ``default``."""
    return task.retry.maxAttempts if task.retry else default


def may_retry(task: Task, default: int = 1) -> bool:
    """True while the task has attempts left under its retry policy (``default`` attempts
    when it sets none)."""
    return task.attempts < max_attempts(task, default)


def next_attempt_at(task: Task, now: datetime) -> datetime:
    """When the next attempt of ``task`` may start."""
    return now + timedelta(seconds=backoff_seconds(task.attempts))


def outage_wait_seconds(waited_seconds: float, cap_seconds: float) -> float:
    """The wait before a task waiting for the LLM tries again: as long as it has waited so
    far, at least ``OUTAGE_FIRST_WAIT_SECONDS``, at most ``cap_seconds``."""
    return min(max(waited_seconds, OUTAGE_FIRST_WAIT_SECONDS), cap_seconds)

"""A task's LLM calls are bounded by its attempts: an attempt may take at most its role's step
limit (``MIMIKIT_MAX_STEPS``) of calls, and a task has ``retry.maxAttempts`` attempts
(``MIMIKIT_RETRY_MAX_ATTEMPTS`` when it sets none). A delivery of a task that has already made
that many calls (booked per task, ``spending.book``) fails it at once, without asking the
model, whatever brought it back: a retry, a redelivery, a wait for the model that gave its
attempt back. However a task fails, again and again, it never costs more than its attempts.
"""

from __future__ import annotations

from mimikit.delivery.retry import max_attempts
from mimikit.models import Task
from mimikit.spending import book
from mimikit.store.runtime import Runtime


def call_cap(runtime: Runtime, task: Task) -> int:
    """The most LLM calls ``task`` may make over all its attempts."""
    settings = runtime.settings
    attempts = max(max_attempts(task, settings.retry_max_attempts), 1)
    return attempts * settings.max_steps_for(task.role)


def spent_reason(runtime: Runtime, task: Task) -> str | None:
    """Why ``task`` may not run again (it made the most calls its attempts may take), or
    None while it may."""
    calls = int(book.totals(runtime, "task", task.id)["calls"])
    cap = call_cap(runtime, task)
    if calls < cap:
        return None
    return (f"it made {calls} LLM calls, the most its attempts may take ({cap}: attempts x "
            "MIMIKIT_MAX_STEPS), so it does not run again; give it more with retry.maxAttempts "
            "or MIMIKIT_MAX_STEPS")

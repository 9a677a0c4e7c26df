"""Duplicate delegations: the same prompt + title + type + schedule while one is active."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mimikit.models import Task
from mimikit.store.runtime import Runtime

FINGERPRINT_TTL_SECONDS = 30 * 24 * 3600


def of(task: Task) -> str:
    shape = {"prompt": task.prompt, "title": task.title, "type": task.type, "role": task.role,
             "schedule": task.schedule.model_dump(mode="json", include={"interval", "cron", "runAt"})
             if task.schedule else None,
             "condition": task.model_dump(mode="json")["condition"] if task.condition else None}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:32]


def active_duplicate(runtime: Runtime, task: Task, staged: list[Task] | None = None) -> str | None:
    """The id of an active task with the same fingerprint, if any."""
    digest = of(task)
    for other in staged or []:
        if of(other) == digest:
            return other.id
    existing = runtime.redis.get(runtime.keys.fingerprint(digest))
    if not existing:
        return None
    other_task = runtime.tasks.get(existing.decode())
    return other_task.id if other_task and not other_task.finished else None


def remember(runtime: Runtime, task: Task, pipe: Any = None) -> None:
    """Note ``task`` as the active holder of its fingerprint (in ``pipe`` when given)."""
    target = pipe or runtime.redis
    target.set(runtime.keys.fingerprint(of(task)), task.id, ex=FINGERPRINT_TTL_SECONDS)

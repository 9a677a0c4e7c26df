"""Listing tasks: shared by the ``list_tasks`` tool, the API and the CLI.

Active tasks and triggers are few and listed whole. Finished tasks are many (they are kept for
``MIMIKIT_RETENTION_DAYS``), so they are read a page at a time from the index of finished
tasks, newest first; a page ends with the cursor (``nextBefore``) of the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from mimikit.exceptions import InvalidValue
from mimikit.models import Task
from mimikit.spending import book
from mimikit.store import retention
from mimikit.store.runtime import Runtime
from mimikit.summaries import task_summary as summarize
from mimikit.tasks.attempts import attempts_view

Scope = Literal["queue", "running", "triggers", "all", "finished"]
SCOPES = ("queue", "running", "triggers", "all", "finished")
RECENT_FINISHED = 50  # finished tasks shown with the active ones, and the default page size
MAX_PAGE = 500  # the largest page of finished tasks
MAX_SCANNED = 5000  # finished tasks looked at for one page when a role filters them


@dataclass
class Page:
    """TaskSummaries, and the cursor of the next page of finished tasks (None: no more)."""

    tasks: list[dict[str, Any]]
    next_before: str | None = None


def list_tasks(runtime: Runtime, scope: str = "all", role: str | None = None,
               include_finished: bool = False) -> list[dict[str, Any]]:
    """TaskSummaries for ``scope`` (queue / running / triggers / all / finished), optionally by
    role; ``all`` has the newest finished tasks too with ``include_finished``."""
    if scope == "all" and not include_finished:
        return [summarize(t) for t in _unique(_active(runtime, scope, role))]
    return list_page(runtime, scope, role).tasks


def list_page(runtime: Runtime, scope: str = "all", role: str | None = None,
              limit: int = RECENT_FINISHED, before: datetime | str | None = None) -> Page:
    """One page: the active tasks of ``scope`` and, for ``all`` and ``finished``, up to
    ``limit`` finished tasks, newest first, before ``before`` (a time, or the cursor of the
    previous page: ``finished`` only).

    Raises:
        InvalidValue: An unknown scope, a limit out of range, or ``before`` with another scope.
        NotFound: ``before`` is a cursor of a task that is no longer kept.
    """
    if scope not in SCOPES:
        raise InvalidValue(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidValue(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    if before is not None and scope != "finished":
        raise InvalidValue("before pages finished tasks: use it with scope=finished")
    if scope == "finished":
        return finished_page(runtime, limit, before, role)
    active = _active(runtime, scope, role)
    if scope != "all":
        return Page([summarize(t) for t in _unique(active)])
    recent = finished_page(runtime, limit, None, role)
    ids = {t.id for t in active}
    return Page([summarize(t) for t in _unique(active)]
                + [s for s in recent.tasks if s["id"] not in ids], recent.next_before)


def finished_page(runtime: Runtime, limit: int, before: datetime | str | None = None,
                  role: str | None = None) -> Page:
    """Up to ``limit`` finished tasks (of ``role``), newest first, before ``before``."""
    before_time = before.timestamp() if isinstance(before, datetime) else None
    last_seen = before if isinstance(before, str) else None
    picked: list[Task] = []
    scanned = 0
    while scanned < MAX_SCANNED:
        ids = retention.newest_finished(runtime.redis, runtime.keys, limit + 1,
                                        before=before_time, after_id=last_seen)
        by_id = {task.id: task for task in runtime.tasks.by_id(ids)}
        for task_id in ids:
            if len(picked) == limit:  # and there is more
                return Page([summarize(t) for t in picked], picked[-1].id)
            last_seen, scanned = task_id, scanned + 1
            task = by_id.get(task_id)  # gone: expired before the tick deleted its id
            if task is not None and role in (None, task.role):
                picked.append(task)
        if len(ids) <= limit:  # the index has no more
            return Page([summarize(t) for t in picked])
    return Page([summarize(t) for t in picked], last_seen)


def _active(runtime: Runtime, scope: str, role: str | None) -> list[Task]:
    tasks: list[Task] = []
    if scope in ("queue", "all"):
        tasks += [t for t in runtime.tasks.with_status("queued", "deferred") if not t.is_trigger]
    if scope in ("running", "all"):
        tasks += runtime.tasks.with_status("running")
    if scope in ("triggers", "all"):
        tasks += runtime.triggers.all()
    return [t for t in tasks if role in (None, t.role)]


def _unique(tasks: list[Task]) -> list[Task]:
    return list({task.id: task for task in tasks}.values())


def detail(runtime: Runtime, task_id: str) -> dict[str, Any] | None:
    """Everything about one task (``GET /api/tasks/ID``, ``mimikit task show``): the task, its
    result, its events, its finished runs, the steps of a run in progress and its attempts
    (``tasks.attempts``); None if unknown."""
    task = runtime.tasks.get(task_id)
    if task is None:
        return None
    result = runtime.tasks.result(task_id)
    spent = "trigger" if task.is_trigger else "task"
    events = runtime.tasks.log_of(task_id)
    return {"task": task.dump(), "result": result.dump() if result else None,
            "events": events, "runs": runtime.runs.of(task_id),
            "live": runtime.runs.live_steps(task_id),
            "usage": book.totals(runtime, spent, task_id),
            "attempts": attempts_view(task, events, runtime.settings.retry_max_attempts)}

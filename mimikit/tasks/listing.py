"""Listing tasks: shared by the ``list_tasks`` tool, the API and the CLI."""

from __future__ import annotations

from typing import Any, Literal

from mimikit.models import Task
from mimikit.spending import book
from mimikit.store.runtime import Runtime
from mimikit.store.state import summarize

Scope = Literal["queue", "running", "triggers", "all"]
SCOPES = ("queue", "running", "triggers", "all")
RECENT_FINISHED = 50


def list_tasks(runtime: Runtime, scope: str = "all", role: str | None = None,
               include_finished: bool = False) -> list[dict[str, Any]]:
    """TaskSummaries for ``scope`` (queue / running / triggers / all), optionally by role."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    state = runtime.state
    tasks: list[Task] = []
    if scope in ("queue", "all"):
        tasks += [t for t in state.tasks_with_status("queued", "deferred") if not t.is_trigger]
    if scope in ("running", "all"):
        tasks += state.tasks_with_status("running")
    if scope in ("triggers", "all"):
        tasks += state.triggers()
    if include_finished and scope == "all":
        finished = state.tasks_with_status("done", "failed", "canceled")
        finished = [t for t in finished if not t.is_trigger or t.status != "queued"]
        finished.sort(key=lambda t: t.completedAt or t.createdAt, reverse=True)
        tasks += finished[:RECENT_FINISHED]
    if role:
        tasks = [t for t in tasks if t.role == role]
    seen: set[str] = set()
    unique = [t for t in tasks if not (t.id in seen or seen.add(t.id))]  # type: ignore[func-returns-value]
    return [summarize(t) for t in unique]


def detail(runtime: Runtime, task_id: str) -> dict[str, Any] | None:
    """Everything about one task (``GET /api/tasks/ID``, ``mimikit task show``): the task, its
    result, its events, its finished runs and the steps of a run in progress; None if unknown."""
    state = runtime.state
    task = state.get_task(task_id)
    if task is None:
        return None
    result = state.get_result(task_id)
    spent = "trigger" if task.is_trigger else "task"
    return {"task": task.dump(), "result": result.dump() if result else None,
            "events": state.task_log(task_id), "runs": state.runs(task_id),
            "live": state.live_steps(task_id), "usage": book.totals(runtime, spent, task_id)}

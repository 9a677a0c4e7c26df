"""The Planner: splits a request into Worker tasks and triggers, committed when it is done."""

from __future__ import annotations

import logging
from typing import Any

from mimikit.agents.common import run_role
from mimikit.agents.context import context_sections
from mimikit.agents.prompts import build_system_prompt, choose_mode
from mimikit.conversation.gate import wake
from mimikit.delivery.execution import RunControl, execute
from mimikit.llm.loop import RunRecord
from mimikit.models import Result, Task, utcnow
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe
from mimikit.tasks import submit
from mimikit.tools.context import ToolContext

log = logging.getLogger("mimikit.planner")


def run_planner(runtime: Runtime, task_id: str, celery_id: str | None) -> str:
    """One delivery of a Planner task."""

    def body(control: RunControl) -> Result:
        task = control.task
        ctx = ToolContext(runtime=runtime, role="planner", trace_id=task.traceId, task=task)
        sections = context_sections(runtime, [task.prompt])
        system = build_system_prompt("planner", choose_mode("planner", bool(sections)), sections)
        now = utcnow().astimezone(runtime.settings.tz).isoformat(timespec="seconds")
        user = (f"Current time: {now} (time zone {runtime.settings.timezone})\n\n"
                f"## User request\n{task.prompt}")
        record = run_role(runtime, ctx, system, user, control.remaining(),
                          on_step=lambda _r: control.check(), owners=(task.id,))
        result = planner_result(task, record)
        if result.status == "done" and ctx.staged:
            staged = list(ctx.staged)
            control.commit_hooks.append(lambda pipe, _t: commit(runtime, pipe, staged))
            control.after_hooks.append(lambda _t, _r: after_commit(runtime, staged))
        # The Teller hears of every result but a plan whose tasks report for themselves; a
        # Planner that answered from history or memory delegated nothing.
        control.notify_teller = not (result.status == "done" and ctx.staged)
        return result

    decision = execute(runtime.state, task_id, celery_id, runtime.settings.planner_timeout, body)
    if decision.outcome == "started":
        wake(runtime)
    return decision.outcome


def planner_result(task: Task, record: RunRecord) -> Result:
    """The Planner's Result from how its run ended."""
    if record.status == "stopped" and isinstance(record.stopValue, dict):
        value: dict[str, Any] = record.stopValue
        return Result(id=task.id, attempts=task.attempts, traceId=task.traceId, **value)
    error = record.error or "the Planner ended without calling submit_result"
    return Result(id=task.id, status="failed", error=error, attempts=task.attempts,
                  traceId=task.traceId)


def commit(runtime: Runtime, pipe: WritePipe, staged: list[Task]) -> None:
    """Store the staged tasks in the transaction that finishes the Planner task.

    They are created now, not when staged: a ``runAt`` that passed while the Planner still
    worked is due at once, not a missed run.
    """
    now = utcnow()
    for task in staged:
        task.createdAt = now
    submit.stage(runtime, pipe, staged, note="planned")


def after_commit(runtime: Runtime, staged: list[Task]) -> None:
    """Start the committed tasks (enqueue oneshots, install triggers), tell the user."""
    submit.start(runtime, staged)
    for task in staged:
        kind = "" if task.type == "oneshot" else f" ({task.type})"
        runtime.state.system_message(f"Task created{kind}: {task.title or task.prompt[:80]}",
                                     taskId=task.id, traceId=task.traceId)

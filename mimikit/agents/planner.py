"""The Planner: splits a request into Worker tasks and triggers, committed when it is done."""

from __future__ import annotations

import logging
from typing import Any

from mimikit.agents.common import run_role
from mimikit.agents.context import context_sections
from mimikit.agents.prompts import build_prompts, choose_mode
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.llm.record import RunRecord
from mimikit.models import Result, Task, utcnow
from mimikit.store.journal import RunJournal
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext

log = logging.getLogger("mimikit.planner")


def run_planner(runtime: Runtime, task_id: str, celery_id: str | None) -> str:
    """One delivery of a Planner task."""

    def body(control: RunControl) -> Result:
        task = control.task
        ctx = ToolContext(runtime=runtime, role="planner", trace_id=task.traceId, task=task)
        sections = context_sections(runtime, [task.prompt])
        now = utcnow().astimezone(runtime.settings.tz).isoformat(timespec="seconds")
        system, user = build_prompts(
            "planner", choose_mode("planner", bool(sections)), sections,
            f"Current time: {now} (time zone {runtime.settings.timezone})\n\n"
            f"## User request\n{task.prompt}")
        record = run_role(runtime, ctx, system, user, control.remaining(),
                          on_step=control.step, owners=(task.id,),
                          journal=RunJournal(runtime.redis, runtime.keys, task.id))
        result = planner_result(task, record)
        if result.status == "done":  # its delegations commit with the result
            control.delivery.staged = list(ctx.staged)
        return result

    return execute(runtime, task_id, celery_id, runtime.settings.planner_timeout, body).outcome


def planner_result(task: Task, record: RunRecord) -> Result:
    """The Planner's Result from how its run ended."""
    if record.status == "stopped" and isinstance(record.stopValue, dict):
        value: dict[str, Any] = record.stopValue
        return Result(id=task.id, attempts=task.attempts, traceId=task.traceId, **value)
    error = record.error or "the Planner ended without calling submit_result"
    return Result(id=task.id, status="failed", error=error, attempts=task.attempts,
                  traceId=task.traceId)

"""The Worker: runs one oneshot task with the ``llm`` or the ``codex`` backend."""

from __future__ import annotations

import json
import logging
from functools import partial
from typing import Any

from mimikit.agents.common import run_role
from mimikit.agents.prompts import build_system_prompt
from mimikit.delivery.execution import RunControl, execute
from mimikit.models import Result, Task
from mimikit.scheduling.conditions import task_refs
from mimikit.spending.budget import BudgetExceeded
from mimikit.store.runtime import Runtime
from mimikit.supervisor import archival
from mimikit.supervisor.routing import route_again, task_finished, worth_reporting
from mimikit.tasks.control import pause
from mimikit.tools.context import ToolContext
from mimikit.workspace.codex import run_codex
from mimikit.workspace.local import Workspace

log = logging.getLogger("mimikit.worker")


def run_worker(runtime: Runtime, task_id: str, celery_id: str | None) -> str:
    """One delivery of a Worker task."""

    def body(control: RunControl) -> Result:
        task = control.task
        # Hooks first: a timeout or crash of the backend must still reach the user and the
        # triggers waiting on this task.
        if archival.summary_target(runtime, task.id):
            # Memory upkeep is system work: its result goes to memory/summary/, not the chat.
            control.notify_teller = False
            control.after_hooks.append(
                lambda done, res: archival.write_summary(runtime, done, res))
        else:
            control.report = partial(worth_reporting, runtime)
            control.after_hooks.append(lambda done, res: task_finished(
                runtime, done, res, tell_user=control.notify_teller))
        prompt = worker_prompt(runtime, task)
        if runtime.settings.worker_backend == "codex":
            return _run_codex(runtime, task, prompt, control)
        try:
            return _run_llm(runtime, task, prompt, control)
        except BudgetExceeded as error:
            if error.scope == "trigger":  # the pause tells the person, once, for all firings
                pause(runtime, error.ident, reason=str(error), source="budget")
                control.report = None
                control.notify_teller = False
            raise

    decision = execute(runtime.state, task_id, celery_id, runtime.settings.worker_timeout, body)
    if decision.outcome == "finished" and decision.task and decision.detail in ("done", "failed"):
        route_again(runtime, decision.task)
    return decision.outcome


def _run_llm(runtime: Runtime, task: Task, prompt: str, control: RunControl) -> Result:
    workspace = Workspace(runtime.settings.work_dir.resolve(),
                          private=(runtime.settings.state_dir,))
    control.on_cancel.append(workspace.cancel)
    ctx = ToolContext(runtime=runtime, role="worker", trace_id=task.traceId, task=task,
                      workspace=workspace)
    system = build_system_prompt("worker", "minimal")
    record = run_role(runtime, ctx, system, prompt, control.remaining(),
                      on_step=lambda _r: control.check(), owners=(task.id,))
    base: dict[str, Any] = {"id": task.id, "attempts": task.attempts, "traceId": task.traceId}
    if record.status == "stopped" and isinstance(record.stopValue, dict):
        return Result(**base, **record.stopValue)
    return Result(**base, status="failed", error=record.error or "the Worker ended without a result")


def _run_codex(runtime: Runtime, task: Task, prompt: str, control: RunControl) -> Result:
    settings = runtime.settings
    outcome = run_codex(prompt, settings.work_dir.resolve(), timeout=control.remaining(),
                        model=settings.worker_model, cancel_event=control.cancel_event)
    control.check()
    return Result(id=task.id, status=outcome.status, resultType=outcome.resultType,
                  result=outcome.result or {}, error=outcome.error, attempts=task.attempts,
                  traceId=task.traceId)


def worker_prompt(runtime: Runtime, task: Task) -> str:
    """The task's prompt, plus the results of the tasks it depends on."""
    parts = [f"## Task {task.id}" + (f": {task.title}" if task.title else ""), task.prompt]
    upstream = _upstream_ids(runtime, task)
    for ref in upstream:
        result = runtime.state.get_result(ref)
        if result is None:
            continue
        parts.append(f"## Result of {ref} ({result.status}, {result.resultType})\n```json\n"
                     + json.dumps(result.result, ensure_ascii=False, indent=1)[:8000] + "\n```")
    if task.catchUp:
        parts.append("(This run catches up on runs missed while the scheduler was down.)")
    return "\n\n".join(parts)


def _upstream_ids(runtime: Runtime, task: Task) -> list[str]:
    if not task.triggerId:
        return []
    trigger = runtime.state.get_task(task.triggerId)
    if trigger is None or trigger.condition is None:
        return []
    return task_refs(trigger.condition)


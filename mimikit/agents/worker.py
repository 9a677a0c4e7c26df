"""The Worker: runs one oneshot task with the backend of ``MIMIKIT_WORKER_BACKEND``.

Every backend gets the same run (``agents.common.run_role``): the Worker's role prompt before
the task, each model call metered against the budgets, live steps, and a transcript kept under
the task.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mimikit.agents.common import BACKENDS, run_role
from mimikit.agents.now import time_line
from mimikit.agents.prompts import system_prompt
from mimikit.agents.servers import start_servers, worker_system
from mimikit.exceptions import McpFailure
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.llm.record import RunRecord
from mimikit.models import Result, Task
from mimikit.scheduling.conditions import task_refs
from mimikit.store.journal import RunJournal
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext
from mimikit.workspace.local import Workspace
from mimikit.workspace.named import NamedFiles, state_lines
from mimikit.workspace.sandbox import sandbox_for
from mimikit.workspace.slots import slots_for

log = logging.getLogger("mimikit.worker")
UPSTREAM_RESULT_CHARS = 8000
FILES_HEADING = "## In the work directory now\n"
# What a task a schedule runs is told: given "Remind the user to turn off the lights." as it
# fired, the 1.5B model ran ``sudo shutdown -h now``, and 15 of 15 such reminders made a call
# first (``echo``, a file reminder.txt, ``sudo reboot``); with this line and the reminder
# example last among the Worker's, 14 of 15 gave the words as the result (none with the line
# alone), and work a schedule runs still acted (3 of 3). First among the examples, the 0.5B
# model answered more file tasks with no call (17 of 20 recorded against 12; last: 15).
SCHEDULED_NOTE = ("(The user scheduled this for now. A reminder needs no tool: submit_result "
                  "with the words to tell the user.)")

# What a Worker's first answer may not call when a file its task names holds something
# (answers held to a schema). Given "Count the number of lines in shopping.txt" with
# shopping.txt there, the 1.5B model's first call wrote it anew ("apple\nbanana\norange"),
# was refused, and gave up; 7 of 12 such tasks (a size, a sum, a word count, a sort into a
# new file...) began with ``write_file`` over the named file, none without it (``wc -l``,
# ``read_file``, ``append_file``, ``sed -i``, ``sort colors.txt > sorted.txt``). A write over
# a file the run has not read is refused anyway (``Workspace.unread_bytes``).
OPENING_WITHHELD = ("write_file",)
# What the first answer of a Worker may not call unless a schedule fired its task (a reminder
# is words, no tool): a result before anything was run or read says nothing it saw. The 0.5B
# model's first answer was ``submit_result`` in 13 of 19 such tasks recorded, ``done`` with
# what it never looked at ("fox.txt is written: 12 bytes", "my work folder is empty: it is 0
# bytes"); the 1.5B model's first answer acted in 71 of 71.
UNSEEN_RESULT = ("submit_result",)


def run_worker(runtime: Runtime, task_id: str, celery_id: str | None) -> str:
    """One delivery of a Worker task."""

    def body(control: RunControl) -> Result:
        task, settings = control.task, runtime.settings
        workspace = Workspace(settings.work_dir.resolve(), private=(settings.state_dir,),
                              sandbox=sandbox_for(settings), slots=slots_for(settings))
        control.on_stop(workspace.cancel)
        upstream = upstream_ids(runtime, task)
        scheduled = fired(task, upstream)
        named = NamedFiles.of(workspace, task.prompt, scheduled=scheduled)
        ctx = ToolContext(runtime=runtime, role="worker", trace_id=task.traceId, task=task,
                          workspace=workspace, named=named,
                          opening_withheld=(() if scheduled else UNSEEN_RESULT)
                          + (OPENING_WITHHELD if named.held else ()))
        try:  # the MCP servers the task names (the codex backend has its own)
            servers = start_servers(runtime, task, control) \
                if settings.worker_backend == "llm" else None
        except McpFailure as error:
            return Result(id=task.id, attempts=task.attempts, traceId=task.traceId,
                          status="failed", error=str(error))
        tools = servers.tools if servers is not None else []
        try:
            record = run_role(runtime, ctx, worker_system(system_prompt("worker"), tools),
                              worker_prompt(runtime, task, workspace, upstream),
                              control.remaining(),
                              on_step=control.step, owners=(task.id,),
                              engine=BACKENDS[settings.worker_backend], cancel=control.stopping,
                              journal=RunJournal(runtime.redis, runtime.keys, task.id),
                              tools=tools)
        finally:
            if servers is not None:
                servers.close()
        if record.status != "stopped":  # e.g. a backend stopped because of a cancel
            control.check()
        return worker_result(task, record)

    return execute(runtime, task_id, celery_id, runtime.settings.worker_timeout, body).outcome


def worker_result(task: Task, record: RunRecord) -> Result:
    """The Worker's Result from how its run ended."""
    base: dict[str, Any] = {"id": task.id, "attempts": task.attempts, "traceId": task.traceId}
    if record.status == "stopped" and isinstance(record.stopValue, dict):
        return Result(**base, **record.stopValue)
    return Result(**base, status="failed",
                  error=record.error or "the Worker ended without a result")


def worker_prompt(runtime: Runtime, task: Task, workspace: Workspace,
                  upstream: list[str]) -> str:
    """The task's prompt, which of the paths it names are in the work directory, and the outcome
    (result, or error) of each task it waited on (``upstream``, as ``upstream_ids`` gives)."""
    parts = [time_line(runtime.settings),
             f"## Task {task.id}" + (f": {task.title}" if task.title else ""), task.prompt]
    states = state_lines(workspace, task.prompt)
    if states:
        parts.append(FILES_HEADING + "\n".join(f"- {line}" for line in states))
    for ref in upstream:
        result = runtime.tasks.result(ref)
        if result is None:
            continue
        block = (f"## Result of {ref} ({result.status}, {result.resultType})\n```json\n"
                 + json.dumps(result.result, ensure_ascii=False, indent=1)[:UPSTREAM_RESULT_CHARS]
                 + "\n```")
        if result.error:
            block += f"\nerror: {result.error[:UPSTREAM_RESULT_CHARS]}"
        parts.append(block)
    if fired(task, upstream):
        parts.append(SCHEDULED_NOTE)
    if task.catchUp:
        parts.append("(This run catches up on runs missed while the scheduler was down.)")
    return "\n\n".join(parts)


def fired(task: Task, upstream: list[str]) -> bool:
    """Whether ``task`` is work a schedule runs: a step of a chain (it waited on ``upstream``)
    is no one's reminder."""
    return bool(task.triggerId) and not upstream


def upstream_ids(runtime: Runtime, task: Task) -> list[str]:
    """The tasks whose end started ``task``: those its trigger's condition waits on."""
    if not task.triggerId:
        return []
    trigger = runtime.tasks.get(task.triggerId)
    if trigger is None or trigger.condition is None:
        return []
    return task_refs(trigger.condition)

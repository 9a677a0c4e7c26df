"""What follows a finished task: a line in the chat, its result routed to the triggers waiting
on it, and a Teller wake for the result queued in its inbox."""

from __future__ import annotations

from mimikit.conversation.gate import wake
from mimikit.models import Result, Task
from mimikit.scheduling import triggers
from mimikit.store.runtime import Runtime


def task_finished(runtime: Runtime, task: Task, result: Result) -> list[str]:
    """Tell the user, route the result, wake the Teller; returns the ids of triggers fired."""
    label = task.title or task.prompt[:80]
    if result.status == "failed":
        text = f"Task failed: {label} — {result.error}"
    else:
        text = f"Task completed: {label}"
    runtime.state.system_message(text, taskId=task.id, traceId=task.traceId)
    fired = triggers.on_result(runtime, task, result)
    wake(runtime)
    return fired


def route_again(runtime: Runtime, task: Task) -> list[str]:
    """Route a finished task's stored result once more (a redelivery after a crash between the
    commit and the routing); the triggers claim each firing, so nothing fires twice."""
    result = runtime.state.get_result(task.id)
    return triggers.on_result(runtime, task, result) if result is not None else []

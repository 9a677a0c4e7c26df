"""What follows a finished task: a line in the chat and a Teller wake when the person should
hear of it, and its result routed to the triggers waiting on it.

The person hears of failures, questions and final results; an intermediate step of a chain
(another trigger waits on it) and a routine run of recurring work stay in the task panel and
cost no Teller call. A trigger's ``notify`` says otherwise: ``always``, ``on_change`` (its result
differs from the previous firing's), ``on_failure`` (the default of recurring work) or ``never``.
"""

from __future__ import annotations

import hashlib
import json

from mimikit.conversation.gate import wake
from mimikit.models import Result, Task
from mimikit.scheduling import triggers
from mimikit.scheduling.retirement import retire_spent_dependents
from mimikit.store.runtime import Runtime

DEFAULT_NOTIFY = {"recurring": "on_failure", "scheduled": "always", "conditional": "final"}


def worth_reporting(runtime: Runtime, task: Task, result: Result) -> bool:
    """Whether the person should hear of ``result`` (decided once, before it is written)."""
    if result.status != "done":
        return True  # failures and questions always
    trigger = runtime.state.get_task(task.triggerId) if task.triggerId else None
    owner = trigger or task  # a fired task follows its trigger's choice, a oneshot its own
    policy = owner.notify or DEFAULT_NOTIFY.get(owner.type, "final")
    if policy == "final":
        return not _awaited(runtime, task)
    if policy == "on_change":
        return _changed(runtime, task.triggerId or task.id, result)
    return policy == "always"


def _awaited(runtime: Runtime, task: Task) -> bool:
    """True when a trigger waits on this task (or on the trigger that fired it)."""
    pipe = runtime.redis.pipeline(transaction=False)
    for ref in (task.id, task.triggerId):
        if ref:
            pipe.scard(runtime.keys.dependents(ref))
    return any(pipe.execute())


def _changed(runtime: Runtime, trigger_id: str, result: Result) -> bool:
    """True when this result differs from the trigger's previous one (the first one counts)."""
    body = json.dumps(result.result, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(body.encode()).hexdigest()
    previous = runtime.redis.getset(runtime.keys.meta(f"lastresult:{trigger_id}"), digest)
    return previous is None or previous.decode() != digest


def task_finished(runtime: Runtime, task: Task, result: Result, tell_user: bool = True
                  ) -> list[str]:
    """Route the result; when ``tell_user``, a line in the chat and a Teller wake too.

    Returns the ids of the triggers fired.
    """
    if tell_user:
        label = task.title or task.prompt[:80]
        if result.status == "failed":
            text = f"Task failed: {label} — {result.error}"
        else:
            text = f"Task completed: {label}"
        runtime.state.system_message(text, taskId=task.id, traceId=task.traceId)
    dependents = triggers.dependents_of(runtime, task)
    fired = triggers.on_result(runtime, task, result, dependents)
    retire_spent_dependents(runtime, task, dependents)
    if tell_user:
        wake(runtime)
    return fired


def route_again(runtime: Runtime, task: Task) -> list[str]:
    """Route a finished task's stored result once more (a redelivery after a crash between the
    commit and the routing); the triggers claim each firing, so nothing fires twice."""
    result = runtime.state.get_result(task.id)
    dependents = triggers.dependents_of(runtime, task)
    fired = triggers.on_result(runtime, task, result, dependents) if result is not None else []
    retire_spent_dependents(runtime, task, dependents)
    return fired

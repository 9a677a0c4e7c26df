"""Step: a result goes to the triggers waiting on its task; what can never fire is retired.

The triggers that wait on the task (or on the trigger that fired it) are read once, before the
outcome is recorded. Once it is: a result fires the ones whose condition now holds; then every
one that can never fire again is retired, and so on down the chain: a chain A -> B -> C
whose A failed retires B and then C, each ``canceled`` with the reason (``upstream A failed:
...``), and the person hears of it once, in A's report (a retired trigger has no result, no
children and no report of its own: routing is all its end needs). A finished trigger loses its
beat entry and indexes.
"""

from __future__ import annotations

import json

from mimikit.lifecycle.event import Completion
from mimikit.models import Task
from mimikit.scheduling import triggers
from mimikit.scheduling.retirement import spent, upstream_reason
from mimikit.store.runtime import Runtime


def before(runtime: Runtime, completion: Completion) -> None:
    completion.dependents = runtime.triggers.dependents(completion.task)


def after(runtime: Runtime, completion: Completion) -> None:
    task = completion.recorded or completion.task
    if task.is_trigger:
        triggers.unschedule(runtime, task)
    if completion.result is not None:
        triggers.on_result(runtime, task, completion.result, completion.dependents)
    completion.retired = retire_spent(runtime, completion.dependents)
    if completion.retired:  # for the Teller's report of this task
        runtime.redis.set(runtime.keys.retired_by(task.id),
                          json.dumps([t.title or t.prompt[:60] for t in completion.retired]),
                          ex=runtime.settings.retention_seconds)


def route_again(runtime: Runtime, task: Task) -> list[str]:
    """Route a finished task's stored result once more (a redelivery after a crash between the
    record and the routing); each firing is claimed once, so nothing fires twice. Returns the
    ids of the triggers fired."""
    dependents = runtime.triggers.dependents(task)
    result = runtime.tasks.result(task.id)
    fired = triggers.on_result(runtime, task, result, dependents) if result is not None else []
    retire_spent(runtime, dependents)
    return fired


def retire_spent(runtime: Runtime, trigger_ids: list[str]) -> list[Task]:
    """Retire the triggers among ``trigger_ids`` that can never fire again; returns them, and
    the ones their retirement retired in turn."""
    retired: list[Task] = []
    for trigger in runtime.tasks.by_id(trigger_ids):
        if spent(runtime, trigger):
            retired += retire(runtime, trigger)
    return retired


def retire(runtime: Runtime, trigger: Task) -> list[Task]:
    """Finish a spent trigger: ``done`` when it fired before (it did its work), else
    ``canceled`` with the reason. Returns it and what its retirement retired in turn."""
    dependents = runtime.triggers.dependents(trigger)
    if trigger.lastTriggeredAt is not None:
        retired = runtime.tasks.set_status(trigger.id, "done")
        reason = "every task its condition waits on has finished"
    else:
        reason = upstream_reason(runtime, trigger)
        retired = runtime.tasks.set_status(trigger.id, "canceled", reason=reason)
    if retired is None:
        return []
    triggers.unschedule(runtime, retired)
    runtime.events.log("trigger_retired", taskId=trigger.id, traceId=trigger.traceId,
                       reason=reason, status=retired.status)
    return [retired, *retire_spent(runtime, dependents)]

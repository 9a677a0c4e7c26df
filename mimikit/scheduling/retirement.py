"""Whether a conditional trigger can never fire again (it is then retired, see
``lifecycle.routing``).

A condition whose atoms are all settled (each rests on a task finished for good: a oneshot, or
a finished trigger none of whose runs is still going) can only hold for results it has already
seen: once it does not hold now, the trigger is spent instead of waiting in the triggers list
forever: a chain step whose upstream failed, a failure branch of a step that succeeded.
"""

from __future__ import annotations

from mimikit.models import Task
from mimikit.scheduling import conditions
from mimikit.store.runtime import Runtime


def spent(runtime: Runtime, trigger: Task) -> bool:
    """True when the conditional ``trigger`` is not finished and can never fire again."""
    if trigger.finished or trigger.type != "conditional" or trigger.condition is None:
        return False
    ctx = conditions.Context(runtime, trigger)
    if not conditions.settled(trigger.condition, ctx):
        return False
    # Not spent while it still fires (now, or when its cooldown ends).
    return conditions.evaluate(trigger.condition, ctx).value is not True


def upstream_reason(runtime: Runtime, trigger: Task) -> str:
    """Why a spent trigger will not run: what became of the tasks it waited on."""
    parts = []
    for ref in conditions.task_refs(trigger.condition):
        task = runtime.tasks.get(ref)
        if task is None:
            parts.append(f"upstream {ref} is gone")
            continue
        label = task.title or task.prompt[:60]
        if task.status == "failed":
            parts.append(f"upstream {label} failed: {task.error or 'no reason given'}")
        elif task.status == "canceled":
            parts.append(f"upstream {label} was canceled: {task.error or 'canceled'}")
        else:
            parts.append(f"upstream {label} finished {task.outcome or task.status}; its "
                         "condition no longer holds")
    return "; ".join(parts) or "its condition can no longer hold"

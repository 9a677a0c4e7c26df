"""Retiring a conditional trigger that can never fire again.

A condition that rests only on ``task_done``/``task_failed`` of tasks that are finished for good
(a oneshot, or a finished trigger none of whose runs is still going) can only hold for results
it has already seen: once it does not hold now, the trigger is finished (``done``) instead of
waiting in the triggers list forever: a chain step that ran, a failure branch of a step that
succeeded.
"""

from __future__ import annotations

from mimikit.models import Task
from mimikit.scheduling import conditions, triggers
from mimikit.store.runtime import Runtime

RECENT_RUNS_CHECKED = 20  # a finished trigger's latest runs that could still report


def retire_spent_dependents(runtime: Runtime, task: Task, dependents: list[str] | None = None
                            ) -> list[str]:
    """Retire the triggers waiting on ``task`` (or its trigger) that are spent now
    (``dependents``: those triggers, when the caller has read them)."""
    ids = triggers.dependents_of(runtime, task) if dependents is None else dependents
    return [tid for tid in ids if retire_if_spent(runtime, tid)]


def retire_if_spent(runtime: Runtime, trigger_id: str) -> bool:
    """Finish the conditional trigger ``trigger_id`` if it can never fire again."""
    trigger = runtime.state.get_task(trigger_id)
    if trigger is None or trigger.finished or trigger.type != "conditional":
        return False
    condition = trigger.condition
    if condition is None or conditions.has_files(condition) or conditions.has_llm(condition):
        return False
    if not all(_settled(runtime, ref) for ref in conditions.task_refs(condition)):
        return False
    if conditions.evaluate(condition, conditions.Context(runtime, trigger)).value is True:
        return False  # it still fires (now, or when its cooldown ends)
    retired = runtime.state.set_status(trigger_id, "done")
    if retired is None:
        return False
    triggers.unschedule(runtime, retired)
    runtime.state.log("trigger_retired", taskId=trigger_id, traceId=retired.traceId,
                      reason="every task its condition waits on has finished")
    return True


def _settled(runtime: Runtime, ref: str) -> bool:
    """True when ``ref`` will never report another result."""
    task = runtime.state.get_task(ref)
    if task is None:
        return True
    if not task.finished:
        return False
    if not task.is_trigger:
        return True
    fired = [e["firedTaskId"] for e in runtime.state.task_log(ref)
             if e.get("type") == "trigger_fired" and e.get("firedTaskId")]
    runs = runtime.state.tasks_by_id(fired[-RECENT_RUNS_CHECKED:])
    return all(run.finished for run in runs)

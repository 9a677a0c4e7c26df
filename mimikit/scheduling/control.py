"""Pausing and resuming a trigger: shared by the API, the CLI, the tools and the budgets.

A paused trigger keeps its definition and indexes but does not fire: a timed one loses its beat
entry until resumed (then it continues from the next slot, not catching up the pause), a
conditional one is not evaluated, and what happened while it was paused does not count.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from mimikit.models import IntervalSchedule, Task, utcnow
from mimikit.scheduling import slots, triggers
from mimikit.scheduling.entries import delete_entry
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe


def pause(runtime: Runtime, trigger_id: str, reason: str, source: str = "user"
          ) -> tuple[bool, str]:
    """Pause an active trigger; returns ``(success, message)``."""
    refusal = _refusal(runtime.tasks.get(trigger_id), trigger_id, want_paused=False)
    if refusal:
        return False, refusal

    def change(task: Task) -> Task | None:
        if task.finished or task.paused:
            return None
        task.paused, task.pausedReason = True, reason
        return task

    paused = runtime.tasks.update(trigger_id, change, _note(runtime, "trigger_paused", source))
    if paused is None:
        return False, f"trigger {trigger_id} is no longer active"
    delete_entry(trigger_id)
    runtime.conversation.system(f"Trigger paused: {_label(paused)} — {reason}",
                                 taskId=trigger_id, traceId=paused.traceId)
    return True, "paused"


def resume(runtime: Runtime, trigger_id: str, source: str = "user") -> tuple[bool, str]:
    """Resume a paused trigger from now on; returns ``(success, message)``."""
    refusal = _refusal(runtime.tasks.get(trigger_id), trigger_id, want_paused=True)
    if refusal:
        return False, refusal
    now = utcnow()

    def change(task: Task) -> Task | None:
        if task.finished or not task.paused:
            return None
        task.paused, task.pausedReason, task.resumedAt = False, None, now
        if isinstance(task.schedule, IntervalSchedule):  # on from the next slot
            task.schedule.nextRunAt = slots.next_after(task.schedule, now)
        return task

    resumed = runtime.tasks.update(trigger_id, change, _note(runtime, "trigger_resumed", source))
    if resumed is None:
        return False, f"trigger {trigger_id} is no longer paused"
    triggers.guarded(runtime, trigger_id, "resume", partial(triggers.install, runtime, resumed),
                     None)
    runtime.conversation.system(f"Trigger resumed: {_label(resumed)}", taskId=trigger_id,
                                 traceId=resumed.traceId)
    return True, "resumed"


def _refusal(task: Task | None, trigger_id: str, want_paused: bool) -> str | None:
    if task is None:
        return f"no task with id {trigger_id!r}; call list_tasks to see the ids"
    if not task.is_trigger:
        return f"task {trigger_id} is a oneshot task; only triggers can be paused or resumed"
    if task.finished:
        return f"trigger {trigger_id} already finished ({task.status})"
    if task.paused != want_paused:
        return f"trigger {trigger_id} is {'already paused' if task.paused else 'not paused'}"
    return None


def _note(runtime: Runtime, kind: str, source: str) -> Callable[[WritePipe, Task, Task], None]:
    """The log line written with the change (who paused or resumed it, and why)."""

    def note(pipe: WritePipe, before: Task, after: Task) -> None:
        pipe.log(runtime.keys, kind, taskId=after.id, traceId=after.traceId, source=source,
                 reason=after.pausedReason)

    return note


def _label(task: Task) -> str:
    return task.title or task.prompt[:80]

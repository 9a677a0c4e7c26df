"""Triggers: recurring, scheduled and conditional tasks, installed, routed to, and given up on.

Recurring and scheduled triggers are RedBeat entries that send ``mimikit.triggers.fire`` at each
slot (``timed``); conditional triggers are indexed by what they depend on (task ids, files,
``llm_eval``) and evaluated when that changes. Every firing creates a oneshot Worker task and
claims its occurrence (trigger id + slot, or the evidence its condition rests on) in the same
transaction, guarded by WATCH on the trigger, so no occurrence ever runs twice. A trigger whose evaluation fails is logged with its id
and skipped, so the others go on; one that fails ``FAILURES_BEFORE_FAILED`` times in a row is
marked failed with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from redis.exceptions import RedisError

from mimikit.delivery.dispatch import enqueue
from mimikit.exceptions import InvalidValue, NotFound
from mimikit.models import IntervalSchedule, Task, utcnow
from mimikit.scheduling import conditions, slots
from mimikit.scheduling.entries import delete_entry, save_entry
from mimikit.store.runtime import Runtime
from mimikit.summaries import task_summary as summarize

log = logging.getLogger("mimikit.triggers")
FAILURES_BEFORE_FAILED = 3
FAILURE_WINDOW_SECONDS = 600  # failures further apart than this do not add up
CLAIM_TTL_SECONDS = 7 * 24 * 3600
Value = TypeVar("Value")


def install(runtime: Runtime, trigger: Task) -> None:
    """Start a committed trigger: its beat entry (timed) or its indexes (conditional).

    Raises:
        InvalidValue: The trigger is not a recurring, scheduled or conditional task.
    """
    if trigger.type in ("recurring", "scheduled"):
        if not trigger.paused:  # a paused trigger gets its entry back when resumed
            _install_timed(runtime, trigger)
    elif trigger.type == "conditional":
        _install_conditional(runtime, trigger)
    else:
        raise InvalidValue(f"task {trigger.id} is a {trigger.type} task, not a trigger")
    runtime.events.log("trigger_installed", taskId=trigger.id, traceId=trigger.traceId,
                      taskType=trigger.type)


def unschedule(runtime: Runtime, trigger: Task) -> None:
    """Remove a trigger's beat entry and indexes (its task is already finished or canceled)."""
    delete_entry(trigger.id)
    condition = trigger.condition
    runtime.triggers.forget(
        trigger.id, conditions.task_refs(condition) if condition is not None else [],
        [path for path, _atom in conditions.atoms(condition)] if condition is not None else [])


def _install_timed(runtime: Runtime, trigger: Task) -> None:
    now = utcnow()
    schedule = trigger.schedule
    if isinstance(schedule, IntervalSchedule):
        if schedule.cron is not None:
            slots.cron_of(schedule)  # a stored expression that no longer parses fails here
        next_run = schedule.nextRunAt or slots.next_after(schedule, now)
        if schedule.nextRunAt != next_run:
            trigger = _set_next_run(runtime, trigger.id, next_run) or trigger
        save_entry(trigger.id, schedule, next_run, now)
    else:
        save_entry(trigger.id, None, slots.run_at_due(trigger), now)


def _set_next_run(runtime: Runtime, trigger_id: str, next_run: datetime) -> Task | None:
    def change(task: Task) -> Task | None:
        if task.finished or not isinstance(task.schedule, IntervalSchedule):
            return None
        task.schedule.nextRunAt = next_run
        return task

    return runtime.tasks.update(trigger_id, change)


def _install_conditional(runtime: Runtime, trigger: Task) -> None:
    index_conditional(runtime, trigger)
    record_baselines(runtime, trigger)
    # What already holds fires at once (e.g. task_done of a task that finished before this
    # trigger existed).
    guarded(runtime, trigger.id, "install",
            lambda: evaluate_and_fire(runtime, trigger.id, cause="installed", trigger=trigger),
            False)


def record_baselines(runtime: Runtime, trigger: Task) -> None:
    """Note every file atom's state now, unless noted before (a restore keeps the old one)."""
    if trigger.condition is None or "tick" not in conditions.watches(trigger.condition):
        return
    runtime.triggers.baseline(trigger.id, conditions.Context(runtime, trigger).file_marks())


def index_conditional(runtime: Runtime, trigger: Task) -> None:
    """Add a conditional trigger to the indexes its atoms need (idempotent)."""
    condition = trigger.condition
    runtime.triggers.index(trigger.id, conditions.task_refs(condition),
                           conditions.watches(condition))


def on_result(runtime: Runtime, task: Task, result: Any, dependents: list[str] | None = None
              ) -> list[str]:
    """Route a result to the triggers that reference its task (or its trigger); fire them.

    ``dependents`` are those triggers when the caller has read them (``TriggerStore.dependents``).
    Returns the ids of the triggers fired.
    """
    ids = runtime.triggers.dependents(task) if dependents is None else dependents
    cause = f"result of {task.id} ({getattr(result, 'status', '?')})"
    routed = {ref: result for ref in (task.id, task.triggerId) if ref}
    return [tid for tid in ids if evaluate(runtime, tid, cause=cause, routed=routed)]


def cooling_until(trigger: Task, now: datetime) -> datetime | None:
    """When a trigger's cooldown ends (``lastTriggeredAt + cooldown``), if it is still on."""
    if trigger.lastTriggeredAt is None:
        return None
    until = trigger.lastTriggeredAt + timedelta(seconds=trigger.cooldown)
    return until if until > now else None


def evaluate_and_fire(runtime: Runtime, trigger_id: str, *, cause: str,
                      trigger: Task | None = None,
                      files: conditions.FileScanner | None = None,
                      routed: dict[str, Any] | None = None) -> bool:
    """Evaluate a conditional trigger now and fire it when its condition holds.

    A trigger cooling down does not fire; it is looked at again when the cooldown ends.
    """
    trigger = trigger or runtime.tasks.get(trigger_id)
    if trigger is None or trigger.finished or trigger.paused or trigger.condition is None:
        return False
    ctx = conditions.Context(runtime, trigger, files, routed)
    evaluation = conditions.evaluate(trigger.condition, ctx)
    if evaluation.value is not True:
        return False
    now = utcnow()
    until = cooling_until(trigger, now)
    if until is not None:
        runtime.triggers.cool_until(trigger.id, until)
        return False
    stamp = trigger.lastTriggeredAt

    def change(task: Task) -> Task | None:
        if task.lastTriggeredAt != stamp:  # fired meanwhile by someone else
            return None
        task.lastTriggeredAt = now
        return task

    marks = ctx.file_marks()

    def extra(pipe: Any) -> None:
        runtime.triggers.queue_fired(pipe, trigger.id, marks)

    child = child_of(trigger, catch_up=False)
    fired = commit_firing(runtime, trigger, evaluation.digest(), change, child,
                          {"cause": cause}, extra)
    return fired is not None


def commit_firing(runtime: Runtime, trigger: Task, occurrence: str,
                  change: Callable[[Task], Task | None], child: Task | None,
                  details: dict[str, Any], extra: Callable[[Any], None] | None = None,
                  ) -> Task | None:
    """Claim ``trigger``'s ``occurrence`` and store ``child`` in one transaction; enqueue it.

    Returns the updated trigger, or None when the occurrence was already claimed, the trigger
    finished, or ``change`` declined.
    """
    keys = runtime.keys
    claim = keys.claim(f"{trigger.id}:{occurrence}")

    def guarded(task: Task) -> Task | None:
        if task.finished or runtime.redis.exists(claim):
            return None
        return change(task)

    def write(pipe: Any, before: Task, after: Task) -> None:
        pipe.set(claim, child.id if child else "-", ex=CLAIM_TTL_SECONDS)
        if child is not None:
            pipe.put_task(keys, child, None)
            pipe.log(keys, "task_created", taskId=child.id, traceId=child.traceId,
                     taskType=child.type, role=child.role, triggerId=trigger.id,
                     catchUp=child.catchUp or None, note="fired")
            pipe.event(keys, "task", summarize(child))
        kind = "trigger_fired" if child is not None else "trigger_skipped"
        pipe.hincrby(keys.counters, f"firings|{trigger.type}|{kind.split('_')[1]}", 1)
        pipe.log(keys, kind, taskId=trigger.id, traceId=trigger.traceId,
                 firedTaskId=child.id if child else None,
                 **{k: v for k, v in details.items() if v is not None})
        if extra:
            extra(pipe)

    try:
        updated = runtime.tasks.update(trigger.id, guarded, write)
    except NotFound:
        return None
    if updated is not None and child is not None:
        enqueue(runtime, child)
    return updated


def child_of(trigger: Task, catch_up: bool) -> Task:
    """The oneshot task one firing of ``trigger`` runs."""
    return Task(type="oneshot", role="planner" if trigger.role == "planner" else "worker",
                prompt=trigger.prompt, title=trigger.title, priority=trigger.priority,
                timeout=trigger.timeout, retry=trigger.retry, mcp=trigger.mcp,
                traceId=trigger.traceId,
                parentId=trigger.parentId, triggerId=trigger.id, catchUp=catch_up)


def evaluate(runtime: Runtime, trigger_id: str, *, cause: str, **context: Any) -> bool:
    """``evaluate_and_fire`` for one trigger among many: a failure is logged, counted against
    this trigger and skipped (False), so the others are still evaluated."""
    return guarded(runtime, trigger_id, cause,
                   lambda: evaluate_and_fire(runtime, trigger_id, cause=cause, **context), False)


def guarded(runtime: Runtime, trigger_id: str, doing: str, step: Callable[[], Value],
            on_failure: Value) -> Value:
    """Run one step of one trigger; a failure (other than Redis being away, which stops the
    whole pass) is noted against the trigger and ``on_failure`` returned instead."""
    try:
        return step()
    except RedisError:
        raise
    except Exception as error:  # a bad trigger must not stop the other triggers
        log.exception("trigger %s: %s failed", trigger_id, doing)
        note_failure(runtime, trigger_id, f"{doing}: {type(error).__name__}: {error}")
        return on_failure


def note_failure(runtime: Runtime, trigger_id: str, reason: str) -> bool:
    """Count a failure of the trigger; True when it was marked failed by this one."""
    key = runtime.keys.meta(f"trigger_failures:{trigger_id}")
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.incr(key)
    pipe.expire(key, FAILURE_WINDOW_SECONDS)
    count = int(pipe.execute()[0])
    runtime.events.log("trigger_error", taskId=trigger_id, error=reason, failures=count)
    if count < FAILURES_BEFORE_FAILED:
        return False
    runtime.redis.delete(key)
    return mark_failed(runtime, trigger_id, f"failed {count} times in a row; last: {reason}")


def mark_failed(runtime: Runtime, trigger_id: str, reason: str) -> bool:
    """Give up on a trigger: it is failed with the reason, unscheduled, and the user told."""
    failed = runtime.tasks.set_status(trigger_id, "failed", reason=reason)
    if failed is None:
        return False
    unschedule(runtime, failed)
    label = failed.title or failed.prompt[:80]
    runtime.conversation.system(f"Trigger failed: {label} — {reason}", taskId=failed.id,
                                 traceId=failed.traceId)
    return True

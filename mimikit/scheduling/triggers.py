"""Triggers: recurring, scheduled and conditional tasks, and their firing.

Recurring and scheduled triggers are RedBeat entries that send ``mimikit.triggers.fire`` at each
slot; conditional triggers are indexed by what they depend on (task ids, files, ``llm_eval``).
Every firing creates a oneshot Worker task and claims its occurrence (trigger id + slot) in the
same transaction, guarded by WATCH on the trigger, so no occurrence ever runs twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from mimikit.delivery.dispatch import enqueue
from mimikit.exceptions import NotFound
from mimikit.models import IntervalSchedule, Task, utcnow
from mimikit.scheduling import conditions, slots
from mimikit.scheduling.entries import delete_entry, save_entry
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.store.state import summarize

log = logging.getLogger("mimikit.triggers")
CLAIM_TTL_SECONDS = 7 * 24 * 3600


def install(runtime: Runtime, trigger: Task) -> None:
    """Start a committed trigger: its beat entry (timed) or its indexes (conditional).

    Raises:
        ValueError: The trigger is not a recurring, scheduled or conditional task.
    """
    if trigger.type in ("recurring", "scheduled"):
        _install_timed(runtime, trigger)
    elif trigger.type == "conditional":
        _install_conditional(runtime, trigger)
    else:
        raise ValueError(f"task {trigger.id} is a {trigger.type} task, not a trigger")
    runtime.state.log("trigger_installed", taskId=trigger.id, traceId=trigger.traceId,
                      taskType=trigger.type)


def unschedule(runtime: Runtime, trigger: Task) -> None:
    """Remove a trigger's beat entry and indexes (its task is already finished or canceled)."""
    keys = runtime.keys
    delete_entry(trigger.id)
    pipe = runtime.redis.pipeline(transaction=False)
    if trigger.condition is not None:
        for ref in conditions.task_refs(trigger.condition):
            pipe.srem(keys.dependents(ref), trigger.id)
        for path, _atom in conditions.atoms(trigger.condition):
            pipe.hdel(keys.verdicts, f"{trigger.id}:{path}")
    pipe.srem(keys.file_triggers, trigger.id)
    pipe.srem(keys.llm_triggers, trigger.id)
    pipe.zrem(keys.cooling, trigger.id)
    pipe.hdel(keys.evaluating, trigger.id)
    pipe.delete(keys.file_seen(trigger.id))
    pipe.execute()


def _install_timed(runtime: Runtime, trigger: Task) -> None:
    now = utcnow()
    schedule = trigger.schedule
    if isinstance(schedule, IntervalSchedule):
        if schedule.cron is not None:
            slots.parse_cron(schedule.cron)
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

    return runtime.state.update_task(trigger_id, change)


def _install_conditional(runtime: Runtime, trigger: Task) -> None:
    index_conditional(runtime, trigger)
    # The first look records the file_changed baselines and fires at once what already holds
    # (e.g. task_done of a task that finished before this trigger existed).
    evaluate_and_fire(runtime, trigger.id, cause="installed", trigger=trigger)


def index_conditional(runtime: Runtime, trigger: Task) -> None:
    """Add a conditional trigger to the indexes its atoms need (idempotent)."""
    keys, condition = runtime.keys, trigger.condition
    pipe = runtime.redis.pipeline(transaction=False)
    for ref in conditions.task_refs(condition):
        pipe.sadd(keys.dependents(ref), trigger.id)
    if conditions.has_files(condition):
        pipe.sadd(keys.file_triggers, trigger.id)
    if conditions.has_llm(condition):
        pipe.sadd(keys.llm_triggers, trigger.id)
    pipe.execute()


# --- firing ------------------------------------------------------------------------------------


def on_result(runtime: Runtime, task: Task, result: Any) -> list[str]:
    """Route a result to the triggers that reference its task (or its trigger); fire them.

    Only ``dependents(task.id)`` and ``dependents(task.triggerId)`` are looked at, so the
    cost does not grow with the number of triggers. Returns the ids of the triggers fired.
    """
    keys = runtime.keys
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.smembers(keys.dependents(task.id))
    if task.triggerId:
        pipe.smembers(keys.dependents(task.triggerId))
    ids = sorted({as_text(i) for members in pipe.execute() for i in members})
    cause = f"result of {task.id} ({getattr(result, 'status', '?')})"
    routed = {ref: result for ref in (task.id, task.triggerId) if ref}
    return [tid for tid in ids if evaluate_and_fire(runtime, tid, cause=cause, routed=routed)]


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
    trigger = trigger or runtime.state.get_task(trigger_id)
    if trigger is None or trigger.finished or trigger.condition is None:
        return False
    ctx = conditions.Context(runtime, trigger, files, routed)
    evaluation = conditions.evaluate(trigger.condition, ctx)
    if evaluation.value is not True:
        return False
    now = utcnow()
    until = cooling_until(trigger, now)
    if until is not None:
        runtime.redis.zadd(runtime.keys.cooling, {trigger.id: until.timestamp()})
        return False
    stamp = trigger.lastTriggeredAt

    def change(task: Task) -> Task | None:
        if task.lastTriggeredAt != stamp:  # fired meanwhile by someone else
            return None
        task.lastTriggeredAt = now
        return task

    marks = ctx.file_marks()

    def extra(pipe: Any) -> None:
        if marks:
            pipe.hset(runtime.keys.file_seen(trigger.id), mapping=marks)
        pipe.zrem(runtime.keys.cooling, trigger.id)

    child = _child(trigger, catch_up=False)
    fired = commit_firing(runtime, trigger, evaluation.digest(), change, child,
                          {"cause": cause}, extra)
    return fired is not None


def fire_timed(runtime: Runtime, trigger_id: str, slot: datetime | None = None,
               sent_at: datetime | None = None) -> str:
    """Fire one slot of a recurring or scheduled trigger (the body of ``mimikit.triggers.fire``).

    Returns ``fired``, ``caught_up``, ``skipped`` (missed slots under ``misfire: skip``),
    ``duplicate`` (slot already claimed), ``stale``, ``early`` or ``gone``.
    """
    trigger = runtime.state.get_task(trigger_id)
    if trigger is None or trigger.finished or trigger.type not in ("recurring", "scheduled"):
        delete_entry(trigger_id)
        return "gone"
    sent_at = sent_at or utcnow()
    if trigger.type == "scheduled":
        return _fire_once(runtime, trigger, sent_at)
    schedule = trigger.schedule
    assert isinstance(schedule, IntervalSchedule)
    expected = schedule.nextRunAt or sent_at
    slot = slot or slots.current_slot(schedule, expected, sent_at)
    if slot < expected - timedelta(seconds=slots.EARLY_TOLERANCE_SECONDS):
        return "stale"
    missed = (slot > expected + timedelta(seconds=slots.EARLY_TOLERANCE_SECONDS)
              or (sent_at - slot).total_seconds() > slots.grace_seconds(trigger, slot))
    run = not (missed and trigger.misfire == "skip")
    following = slots.next_after(schedule, slot)

    def change(task: Task) -> Task | None:
        current = task.schedule
        assert isinstance(current, IntervalSchedule)
        if current.nextRunAt and current.nextRunAt > slot + timedelta(seconds=0.5):
            return None  # a later slot already ran
        current.nextRunAt = following
        if run:
            current.lastRunAt, task.lastTriggeredAt = slot, utcnow()
        return task

    child = _child(trigger, catch_up=missed) if run else None
    details = {"slot": slot.isoformat(), "catchUp": missed or None,
               "skipped": (not run) or None,
               "lateMs": int((sent_at - slot).total_seconds() * 1000)}
    if commit_firing(runtime, trigger, slot.isoformat(), change, child, details) is None:
        return "duplicate"
    return ("caught_up" if missed else "fired") if run else "skipped"


def _fire_once(runtime: Runtime, trigger: Task, sent_at: datetime) -> str:
    due = slots.run_at_due(trigger)
    if sent_at < due - timedelta(seconds=slots.EARLY_TOLERANCE_SECONDS):
        save_entry(trigger.id, None, due, utcnow())  # never early: wait for the real time
        return "early"
    missed = (sent_at - due).total_seconds() > slots.MISFIRE_GRACE_SECONDS
    run = not (missed and trigger.misfire == "skip")

    def change(task: Task) -> Task | None:
        task.status, task.completedAt = "done", utcnow()
        if run:
            task.lastTriggeredAt = task.completedAt
        return task

    child = _child(trigger, catch_up=missed) if run else None
    details = {"slot": due.isoformat(), "catchUp": missed or None, "skipped": (not run) or None}
    committed = commit_firing(runtime, trigger, due.isoformat(), change, child, details)
    delete_entry(trigger.id)
    if committed is None:
        return "duplicate"
    unschedule(runtime, committed)
    return ("caught_up" if missed else "fired") if run else "skipped"


def commit_firing(runtime: Runtime, trigger: Task, occurrence: str,
                  change: Callable[[Task], Task | None], child: Task | None,
                  details: dict[str, Any], extra: Callable[[Any], None] | None = None,
                  ) -> Task | None:
    """Claim ``trigger``'s ``occurrence`` and store ``child`` in one transaction; enqueue it.

    Returns the updated trigger, or None when the occurrence was already claimed, the trigger
    finished, or ``change`` declined.
    """
    state, keys = runtime.state, runtime.keys
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
        pipe.log(keys, kind, taskId=trigger.id, traceId=trigger.traceId,
                 firedTaskId=child.id if child else None,
                 **{k: v for k, v in details.items() if v is not None})
        if extra:
            extra(pipe)

    try:
        updated = state.update_task(trigger.id, guarded, write)
    except NotFound:
        return None
    if updated is not None and child is not None:
        enqueue(runtime, child)
    return updated


def _child(trigger: Task, catch_up: bool) -> Task:
    """The oneshot task one firing of ``trigger`` runs."""
    return Task(type="oneshot", role="planner" if trigger.role == "planner" else "worker",
                prompt=trigger.prompt, title=trigger.title, priority=trigger.priority,
                timeout=trigger.timeout, retry=trigger.retry, traceId=trigger.traceId,
                parentId=trigger.parentId, triggerId=trigger.id, catchUp=catch_up)

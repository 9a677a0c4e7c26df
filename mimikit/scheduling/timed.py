"""Firing one slot of a recurring or scheduled trigger (the body of ``mimikit.triggers.fire``).

A slot is claimed once (trigger id + slot) in the transaction that creates its task, so a slot
re-sent by a restarted or second beat runs nothing twice; missed slots follow the trigger's
``misfire`` policy: one catch-up run (``once``) or none (``skip``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from mimikit.models import IntervalSchedule, Task, utcnow
from mimikit.scheduling import slots
from mimikit.scheduling.entries import delete_entry, save_entry
from mimikit.scheduling.triggers import child_of, commit_firing
from mimikit.store.runtime import Runtime


def fire_timed(runtime: Runtime, trigger_id: str, slot: datetime | None = None,
               sent_at: datetime | None = None) -> str:
    """Fire one slot of a recurring or scheduled trigger (the body of ``mimikit.triggers.fire``).

    Returns ``fired``, ``caught_up``, ``skipped`` (missed slots under ``misfire: skip``),
    ``duplicate`` (slot already claimed), ``stale``, ``early`` or ``gone``.
    """
    trigger = runtime.tasks.get(trigger_id)
    if trigger is None or trigger.finished or trigger.type not in ("recurring", "scheduled"):
        delete_entry(trigger_id)
        return "gone"
    if trigger.paused:  # sent just before the pause removed its entry
        return "paused"
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

    child = child_of(trigger, catch_up=missed) if run else None
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

    child = child_of(trigger, catch_up=missed) if run else None
    details = {"slot": due.isoformat(), "catchUp": missed or None, "skipped": (not run) or None}
    committed = commit_firing(runtime, trigger, due.isoformat(), change, child, details)
    delete_entry(trigger.id)  # a scheduled trigger has nothing else to remove
    if committed is None:
        return "duplicate"
    return ("caught_up" if missed else "fired") if run else "skipped"

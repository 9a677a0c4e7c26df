"""The RedBeat entries of recurring and scheduled triggers, and the slot each firing stands for.

An entry sends ``mimikit.triggers.fire`` with the slot it stands for; it only advances after the
publish succeeded (see ``beat.Scheduler``), so a crash re-sends the same slot, which the fire
task's claim turns into a no-op.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from celery.schedules import schedule as every
from redbeat.decoder import RedBeatJSONEncoder
from redbeat.schedulers import RedBeatSchedulerEntry, get_redis

from mimikit.celery_app import app
from mimikit.delivery.queues import SYSTEM_PRIORITY
from mimikit.models import IntervalSchedule
from mimikit.scheduling import slots

FIRE_TASK = "mimikit.triggers.fire"
FIRE_OPTIONS = {"queue": "supervisor", "priority": SYSTEM_PRIORITY}


def entry_name(trigger_id: str) -> str:
    return f"trigger:{trigger_id}"


def save_entry(trigger_id: str, schedule: IntervalSchedule | None, due: datetime,
               now: datetime) -> None:
    """Create or replace the RedBeat entry of a trigger so that it is next due at ``due``.

    ``schedule`` is the recurring schedule, or None for a one-off (``runAt``) entry.
    """
    if schedule is None:
        run_every = max(due - now, timedelta(milliseconds=1))
        celery_schedule, last, kind = every(run_every), now, "at"
    elif schedule.interval is not None:
        step = timedelta(seconds=schedule.interval)
        celery_schedule, last, kind = every(step), due - step, "interval"
    else:
        cron = slots.parse_cron(schedule.cron or "")
        celery_schedule, last, kind = cron, due - timedelta(seconds=1), "cron"
    entry = RedBeatSchedulerEntry(entry_name(trigger_id), FIRE_TASK, celery_schedule,
                                  args=[trigger_id], kwargs={"kind": kind},
                                  options=dict(FIRE_OPTIONS), app=app, last_run_at=last)
    entry.save()
    # The score is the real due time (RedBeat's own estimate can put it after that time).
    meta = json.dumps({"last_run_at": last}, cls=RedBeatJSONEncoder)
    with get_redis(entry.app).pipeline() as pipe:
        pipe.hset(entry.key, "meta", meta)
        pipe.zadd(entry.app.redbeat_conf.schedule_key, {entry.key: due.timestamp()})
        pipe.execute()


def delete_entry(trigger_id: str) -> None:
    """Remove a trigger's RedBeat entry (nothing happens when there is none)."""
    RedBeatSchedulerEntry(entry_name(trigger_id), app=app).delete()


def entry_exists(trigger_id: str) -> bool:
    return bool(get_redis(app).exists(RedBeatSchedulerEntry.generate_key(
        app, entry_name(trigger_id))))


def slot_of(entry: Any, now: datetime) -> datetime:
    """The slot a due trigger entry stands for (missed slots collapse into the latest)."""
    last = aware(entry.last_run_at) if entry.last_run_at else None
    kind = (entry.kwargs or {}).get("kind")
    if last is None:
        return now
    if kind == "interval":
        step = entry.schedule.run_every.total_seconds()
        return slots.grid_slot(last + timedelta(seconds=step), step, now)
    if kind == "cron":
        return slots.latest_cron(entry.schedule, last, now) or now
    return last + entry.schedule.run_every


def next_due(entry: Any) -> datetime:
    """When an entry that just fired its ``last_run_at`` slot is due again.

    RedBeat's own score subtracts the lateness once more, which makes late entries look due
    early, so every tick reloads them; this is the real time.
    """
    last = aware(entry.last_run_at)
    if (entry.kwargs or {}).get("kind") == "cron":
        return slots.next_cron(entry.schedule, last) or last + timedelta(days=3650)
    return last + entry.schedule.run_every


def aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)

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
from mimikit.scheduling.cron import Cron

FIRE_TASK = "mimikit.triggers.fire"
FIRE_OPTIONS = {"queue": "supervisor", "priority": SYSTEM_PRIORITY}


def entry_name(trigger_id: str) -> str:
    return f"trigger:{trigger_id}"


def save_entry(trigger_id: str, schedule: IntervalSchedule | None, due: datetime,
               now: datetime) -> None:
    """Create or replace the RedBeat entry of a trigger so that it is next due at ``due``.

    ``schedule`` is the recurring schedule, or None for a one-off (``runAt``) entry.
    """
    kwargs: dict[str, Any] = {"kind": "at"}
    if schedule is not None and schedule.interval is not None:
        step = timedelta(seconds=schedule.interval)
        celery_schedule, last, kwargs = every(step), due - step, {"kind": "interval"}
    else:
        celery_schedule, last = every(max(due - now, timedelta(milliseconds=1))), now
        if schedule is not None:  # cron: the gap to the next slot changes at every firing
            kwargs = {"kind": "cron", "cron": schedule.cron, "zone": schedule.timezone}
    entry = RedBeatSchedulerEntry(entry_name(trigger_id), FIRE_TASK, celery_schedule,
                                  args=[trigger_id], kwargs=kwargs,
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
        return _cron(entry).latest_in(last, now) or now
    return last + entry.schedule.run_every


def advance(entry: Any, slot: datetime) -> datetime:
    """Move a recurring entry past ``slot``; returns when it is due next.

    A cron entry's interval becomes the gap to its next slot, so that RedBeat's own due check
    agrees with the score.
    """
    entry.last_run_at = slot
    following = next_due(entry)
    if (entry.kwargs or {}).get("kind") == "cron":
        entry.schedule = every(max(following - slot, timedelta(milliseconds=1)))
    return following


def next_due(entry: Any) -> datetime:
    """When an entry that just fired its ``last_run_at`` slot is due again.

    RedBeat's own score subtracts the lateness once more, which makes late entries look due
    early, so every tick reloads them; this is the real time.
    """
    last = aware(entry.last_run_at)
    if (entry.kwargs or {}).get("kind") == "cron":
        return _cron(entry).next_after(last)
    return last + entry.schedule.run_every


def definition(entry: Any) -> str:
    """The stored definition of an entry (what RedBeat keeps under ``definition``)."""
    return json.dumps({"name": entry.name, "task": entry.task, "args": entry.args,
                       "kwargs": entry.kwargs, "options": entry.options,
                       "schedule": entry.schedule, "enabled": entry.enabled},
                      cls=RedBeatJSONEncoder)


def _cron(entry: Any) -> Cron:
    kwargs = entry.kwargs or {}
    return Cron.parse(kwargs.get("cron") or "", kwargs.get("zone"))


def aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)

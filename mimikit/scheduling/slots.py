"""Time slots of recurring and scheduled triggers: interval grids, cron times, misfire grace.

A recurring trigger's occurrences are fixed points in time (its slots): for an interval, the grid
``nextRunAt + k * interval``; for a cron expression, the times it matches (UTC, minute
resolution). Beat and the fire task both name an occurrence by its slot, so a slot claimed once
is never run again, whoever fires it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from celery.schedules import crontab

from mimikit.models import IntervalSchedule, RunAtSchedule, Task

MISFIRE_GRACE_SECONDS = 60.0
EARLY_TOLERANCE_SECONDS = 0.05
_MAX_CRON_DAYS = 366 * 5
_MAX_CRON_STEPS = 100_000


def parse_cron(expr: str) -> crontab:
    """A celery ``crontab`` from a five-field expression ``"m h dom mon dow"`` (UTC).

    Raises:
        ValueError: The expression does not have five fields or a field is invalid.
    """
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(f"cron {expr!r} needs five fields 'minute hour day month weekday', "
                         "e.g. '*/15 * * * *'")
    minute, hour, dom, month, dow = fields
    try:
        parsed = crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month,
                         day_of_week=dow)
        if next_cron(parsed, datetime(2000, 1, 1, tzinfo=UTC)) is None:
            raise ValueError("it never matches a date")
    except (ValueError, TypeError) as error:
        raise ValueError(f"cron {expr!r} is invalid: {error}") from None
    return parsed


def next_cron(cron: crontab, after: datetime) -> datetime | None:
    """The first time strictly after ``after`` that ``cron`` matches (None: never)."""
    start = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(_MAX_CRON_DAYS):
        # celery numbers weekdays from Sunday = 0; Python from Monday = 0.
        weekday = (day.weekday() + 1) % 7
        if (day.month in cron.month_of_year and day.day in cron.day_of_month
                and weekday in cron.day_of_week):
            for hour in sorted(cron.hour):
                for minute in sorted(cron.minute):
                    moment = day.replace(hour=hour, minute=minute)
                    if moment >= start:
                        return moment
        day += timedelta(days=1)
    return None


def latest_cron(cron: crontab, after: datetime, now: datetime) -> datetime | None:
    """The last time ``cron`` matches in ``(after, now]`` (None: no match in between)."""
    found = None
    moment = next_cron(cron, after)
    for _ in range(_MAX_CRON_STEPS):
        if moment is None or moment > now:
            break
        found, moment = moment, next_cron(cron, moment)
    return found


def grid_slot(anchor: datetime, interval: float, now: datetime) -> datetime:
    """The last point of the grid ``anchor + k * interval`` at or before ``now`` (or anchor)."""
    if now <= anchor:
        return anchor
    steps = math.floor((now - anchor).total_seconds() / interval + 1e-9)
    return anchor + timedelta(seconds=steps * interval)


def next_after(schedule: IntervalSchedule, slot: datetime) -> datetime:
    """The slot following ``slot``."""
    if schedule.interval is not None:
        return slot + timedelta(seconds=schedule.interval)
    found = next_cron(parse_cron(schedule.cron or ""), slot)
    if found is None:
        raise ValueError(f"cron {schedule.cron!r} never matches a date")
    return found


def current_slot(schedule: IntervalSchedule, expected: datetime, now: datetime) -> datetime:
    """The latest slot at or before ``now`` (never before ``expected``, the next due slot)."""
    if schedule.interval is not None:
        return grid_slot(expected, schedule.interval, now)
    found = latest_cron(parse_cron(schedule.cron or ""), expected - timedelta(seconds=1), now)
    return found or expected


def grace_seconds(task: Task, slot: datetime) -> float:
    """How late a run may start and still count as on time (not a misfire)."""
    schedule = task.schedule
    if isinstance(schedule, IntervalSchedule):
        gap = (next_after(schedule, slot) - slot).total_seconds()
        return min(MISFIRE_GRACE_SECONDS, gap)
    return MISFIRE_GRACE_SECONDS


def run_at_due(task: Task) -> datetime:
    """When a scheduled trigger is due: its ``runAt``, or its creation when runAt is past."""
    assert isinstance(task.schedule, RunAtSchedule)
    return max(task.schedule.runAt, task.createdAt)


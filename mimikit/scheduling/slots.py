"""Time slots of recurring and scheduled triggers: interval grids, cron times, misfire grace.

A recurring trigger's occurrences are fixed points in time (its slots): for an interval, the grid
``nextRunAt + k * interval``; for a cron expression, the times it matches in its zone (minute
resolution, see ``cron``). Beat and the fire task both name an occurrence by its slot, so a slot
claimed once is never run again, whoever fires it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from mimikit.exceptions import InvalidValue
from mimikit.models import IntervalSchedule, RunAtSchedule, Task
from mimikit.scheduling.cron import Cron

MISFIRE_GRACE_SECONDS = 60.0
EARLY_TOLERANCE_SECONDS = 0.05


def cron_of(schedule: IntervalSchedule) -> Cron:
    """The cron of a recurring schedule, in the zone it was created in (UTC when none).

    Raises:
        InvalidValue: The schedule has no cron, or its expression is invalid.
    """
    if schedule.cron is None:
        raise InvalidValue("this recurring schedule runs on an interval, not a cron")
    return Cron.parse(schedule.cron, schedule.timezone)


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
    return cron_of(schedule).next_after(slot)


def current_slot(schedule: IntervalSchedule, expected: datetime, now: datetime) -> datetime:
    """The latest slot at or before ``now`` (never before ``expected``, the next due slot)."""
    if schedule.interval is not None:
        return grid_slot(expected, schedule.interval, now)
    found = cron_of(schedule).latest_in(expected - timedelta(seconds=1), now)
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


"""Checking a schedule as a model or a person writes it, before it is stored.

What real models send is read the way they mean it where that is unambiguous (a time without
an offset is local time in ``MIMIKIT_TIMEZONE``), and refused with a reason the model can act on
where it is not (an invalid cron, a ``runAt`` already past). A condition's atoms check their own
params (``mimikit.atoms``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from mimikit.exceptions import InvalidValue
from mimikit.scheduling.cron import Cron
from mimikit.scheduling.slots import MISFIRE_GRACE_SECONDS


def local_time(value: datetime, zone: ZoneInfo) -> datetime:
    """``value`` as an aware time: one without an offset is read in ``zone``."""
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def check_run_at(run_at: datetime, zone: ZoneInfo, now: datetime) -> datetime:
    """The aware ``runAt`` of a scheduled task; refused when it passed beyond the grace.

    Raises:
        InvalidValue: ``runAt`` lies more than the misfire grace in the past.
    """
    when = local_time(run_at, zone)
    if when < now - timedelta(seconds=MISFIRE_GRACE_SECONDS):
        local_now = now.astimezone(zone).isoformat(timespec="seconds")
        daily = when.astimezone(zone)  # a small model's way of asking for "every day at 9"
        raise InvalidValue(
            f"runAt {when.isoformat()} is in the past (now is {local_now}, time zone "
            f"{zone.key}); give a future time, or delegate a oneshot task to run it now; for "
            f"every day at {daily:%H:%M}, schedule it recurring with cron "
            f"\"{daily.minute} {daily.hour} * * *\"")
    return when


def describe_cron(expression: str, zone: str, now: datetime) -> dict[str, Any]:
    """What a cron expression means, for the tool result: its next runs, in its zone.

    Raises:
        InvalidValue: The expression or the zone is invalid (the message says how to write one).
    """
    cron = Cron.parse(expression, zone)
    described: dict[str, Any] = {
        "timezone": zone,
        "nextRuns": [t.isoformat(timespec="minutes") for t in cron.upcoming(now)],
    }
    if cron.both_days_restricted():
        described["note"] = ("day-of-month and day-of-week are both set: like standard cron it "
                             "runs on days matching EITHER one")
    return described

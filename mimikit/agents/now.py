"""The current time as every role is told it."""

from __future__ import annotations

from mimikit.config import Settings
from mimikit.models import utcnow


def time_line(settings: Settings) -> str:
    """``Current time: Saturday 2026-11-28T22:00:43+00:00 (time zone UTC)``: the weekday is
    given, as a small model does not work it out from the date (asked the day of the week, the
    1.5B model answered Monday on a Saturday)."""
    now = utcnow().astimezone(settings.tz)
    return (f"Current time: {now:%A} {now.isoformat(timespec='seconds')} "
            f"(time zone {settings.timezone})")

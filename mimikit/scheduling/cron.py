"""Cron expressions as standard (Vixie) cron reads them, in a time zone, DST-correct.

Five fields ``minute hour day-of-month month day-of-week``; when both day-of-month and
day-of-week are restricted a day matches if EITHER does; ``@hourly``, ``@daily``,
``@weekly``, ``@monthly`` and ``@yearly`` are accepted. Times are evaluated in the trigger's
zone (``MIMIKIT_TIMEZONE`` when it was created), so ``0 9 * * 1-5`` is 09:00 local time before
and after a daylight-saving change. Parsing and matching are cronsim's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from mimikit.exceptions import InvalidValue

ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
EXAMPLES = "e.g. '*/15 * * * *' (every 15 minutes) or '0 9 * * 1-5' (09:00 on weekdays)"
_JUST_AFTER = timedelta(microseconds=1)


@dataclass(frozen=True)
class Cron:
    """One cron expression in one time zone."""

    expression: str
    zone: ZoneInfo

    @classmethod
    def parse(cls, expression: str, zone: str | None = None) -> Cron:
        """Check ``expression`` and bind it to ``zone`` (an IANA name; None means UTC).

        Raises:
            InvalidValue: What is wrong with the expression or the zone, and how to write it.
        """
        text = " ".join(expression.split())
        fields = ALIASES.get(text.lower(), text)
        if text.startswith("@") and fields == text:
            raise InvalidValue(f"cron {expression!r}: unknown shortcut; use one of "
                             f"{', '.join(sorted(ALIASES))} or five fields, {EXAMPLES}")
        if len(fields.split()) != 5:
            raise InvalidValue(f"cron {expression!r} needs five fields 'minute hour day-of-month "
                             f"month day-of-week' (no seconds), {EXAMPLES}")
        try:
            cron = cls(fields, ZoneInfo(zone or "UTC"))
            cron.next_after(datetime(2000, 1, 1, tzinfo=UTC))
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise InvalidValue(f"cron time zone {zone!r} is not an IANA zone: {error}") from None
        except CronSimError as error:
            raise InvalidValue(f"cron {expression!r} is invalid ({error}); {EXAMPLES}") from None
        return cron

    def next_after(self, moment: datetime) -> datetime:
        """The first matching time strictly after ``moment`` (aware UTC)."""
        found: datetime = next(CronSim(self.expression, moment.astimezone(self.zone)))
        return found.astimezone(UTC)

    def latest_in(self, after: datetime, now: datetime) -> datetime | None:
        """The last matching time in ``(after, now]``, or None when none falls in between."""
        start = (now + _JUST_AFTER).astimezone(self.zone)
        found: datetime = next(CronSim(self.expression, start, reverse=True))
        return found.astimezone(UTC) if found > after else None

    def upcoming(self, after: datetime, count: int = 3) -> list[datetime]:
        """The next ``count`` matching times after ``after``, in the cron's zone."""
        times = CronSim(self.expression, after.astimezone(self.zone))
        return [next(times) for _ in range(count)]

    def both_days_restricted(self) -> bool:
        """True when day-of-month and day-of-week are both set (a day matches either)."""
        fields = self.expression.split()
        return fields[2] != "*" and fields[4] != "*"

"""The current time as every role is told it."""

from __future__ import annotations

from mimikit.config import Settings
from mimikit.models import utcnow

# How the line begins: a model that runs on past its answer into its next input is stopped
# there (``llm.attempts``).
OPENING = "Today is "
WEEKDAYS_CHINESE = "一二三四五六日"


def time_line(settings: Settings, chinese: bool = False) -> str:
    """``Today is Saturday 2026-11-28; the time is 22:40 (time zone UTC).``, or in Chinese
    for a person who writes Chinese: told "Sunday", the 1.5B model answered 星期一 to 今天是星期几
    (1 of 7 days wrong in English, 0 of 7 in Chinese).

    The weekday is given, as a small model does not work it out from the date (asked the day
    of the week, the 1.5B model answered Monday on a Saturday); and "today", as it asked the
    person for "today's date" beside ``Current time: Saturday 2026-11-28T22:40:15+00:00``
    (2 of 2 recorded Planner requests asked, none with this line; 24 others answered the
    same with both).
    """
    now = utcnow().astimezone(settings.tz)
    if chinese:
        return (f"今天是 {now:%Y-%m-%d} 星期{WEEKDAYS_CHINESE[now.weekday()]}，"
                f"现在是 {now:%H:%M}（{settings.timezone} 时区）。")
    return f"{OPENING}{now:%A %Y-%m-%d}; the time is {now:%H:%M} (time zone {settings.timezone})."

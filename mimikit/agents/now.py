"""The current time as every role is told it."""

from __future__ import annotations

from datetime import datetime

from mimikit.config import Settings
from mimikit.models import utcnow

# How the line begins: a model that runs on past its answer into its next input is stopped
# there (``llm.attempts``).
OPENING = "Today is "
WEEKDAYS_CHINESE = "一二三四五六日"


def time_line(settings: Settings, chinese: bool = False, minute: bool = True,
              now: datetime | None = None, weekday: bool = True) -> str:
    """``Today is Saturday 2026-11-28; the time is 22:40 (time zone UTC).``, or in Chinese
    for a person who writes Chinese: told "Sunday", the 1.5B model answered 星期一 to 今天是星期几
    (1 of 7 days wrong in English, 0 of 7 in Chinese). Without the ``minute`` (``the hour is
    22``) for a Planner: asked in the hour it names ("every night at 10pm ..." at 22:35), the
    1.5B model scheduled 10 of 14 such requests wrong at 22:35 and its like, 9 at a time
    made of the minute shown ("22:35", "15:30" for 3pm), and 4 of 14 at :05; shown the hour,
    2 of 14 at either, none at the clock's minute; and 23–25 of 26 requests for later were
    planned right at three times of day, against 22–24.

    The weekday is given, as a small model does not work it out from the date (asked the day
    of the week, the 1.5B model answered Monday on a Saturday); and "today", as it asked the
    person for "today's date" beside ``Current time: Saturday 2026-11-28T22:40:15+00:00``
    (2 of 2 recorded Planner requests asked, none with this line; 24 others answered the
    same with both). Not for a Planner (``weekday``): it gives the days a schedule runs on by
    name, and shown "Today is Monday", the 1.5B model scheduled "每天早上9点提醒我喝水" on
    Mondays (2 to 4 of 26 replayed schedules on a Monday, none without the weekday).
    """
    now = (now or utcnow()).astimezone(settings.tz)  # ``now``: a moment the caller keeps
    if chinese:
        return (f"今天是 {now:%Y-%m-%d} 星期{WEEKDAYS_CHINESE[now.weekday()]}，"
                f"现在是 {now:%H:%M}（{settings.timezone} 时区）。")
    clock = f"the time is {now:%H:%M}" if minute else f"the hour is {now:%H}"
    day = f"{now:%A %Y-%m-%d}" if weekday else f"{now:%Y-%m-%d}"
    return f"{OPENING}{day}; {clock} (time zone {settings.timezone})."

"""Work a plan scheduled at a time of day the request never named: the Planner took the time it
was shown, or a time of its own, for the person's. Such a plan is made again without work for
later (``agents.planner``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mimikit.lifecycle.actions import json_object
from mimikit.llm.record import ToolCallRecord

_NUMBER = re.compile(r"(?<!\d)\d{1,2}(?!\d)")
_CLOCK = re.compile(r"(?<![\d:])\d\d:\d\d(?![\d:])")  # a time of day as a prompt writes it


def scheduled_now(calls: Sequence[ToolCallRecord], clock: str, request: str,
                  shown: str = "") -> str | None:
    """The time of day a plan's ``calls`` scheduled work at, where the request names neither
    that time nor its hour, and it is the minute it was asked at (``clock``, HH:MM: its
    History shows it), or once today in that hour (its time line gives the hour alone) or at
    a time its prompt (``shown``) gives another task, or once today and refused (None where
    there is none).

    - The 1.5B and 0.5B models made "add a line 'walk the dog' at the end of tasks.md" a daily
      schedule at the minute they were asked, 7 of 269 recorded schedules (none of the others
      was at that minute), and, shown the hour, the 1.5B made "remove backup.txt" asked at
      02:28 once at 02:30.
    - Asked at 12:44 to "list everything in my workspace", the 1.5B scheduled it at 08:00
      today, was told that time had passed, and made the same call again: the request failed.
    - Asked at 17:39 for "every Friday at 5pm", the 1.5B wrote "17:39" (2 of 2 runs in that
      hour, shown the minute): a few minutes late, but at the person's hour.
    - Asked at 06:51 to "list everything in my workspace", with a reminder at 07:05 among its
      Active work, the 1.5B scheduled the listing at 07:05 today.
    """
    others = set(_CLOCK.findall(shown))
    for call in calls:
        arguments = json_object(call.arguments) if call.name == "schedule" else {}
        at = arguments.get("at")
        if not isinstance(at, str) or at in request or at.lstrip("0") in request or \
                _names_hour(request, at):
            continue
        today = arguments.get("days") == "today"
        if not call.ok and today or \
                call.ok and (at == clock or (today and (at[:2] == clock[:2] or at in others))):
            return at
    return None


def _names_hour(request: str, at: str) -> bool:
    """Whether ``request`` holds the hour of ``at`` (HH:MM) as a number, on a 24- or 12-hour
    clock ("5pm", "17:00" for 17:39)."""
    hour = int(at.partition(":")[0]) if at.partition(":")[0].isdigit() else -1
    return any(int(number) in (hour, hour % 12 or 12) for number in _NUMBER.findall(request))

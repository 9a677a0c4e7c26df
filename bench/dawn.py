"""An eleventh set of everyday requests for the task benchmark (``tasks.py --set dawn``): the
kinds of the others in words none of them uses (a percentage, a note written and then sized, a
script that adds up a range and is run, a weekday reminder in Chinese, a quarter of an hour from
now, a liking kept in Chinese and recalled, the workspace listed, a reminder dropped, characters
counted from one file into another, a file named after the person's city, tomorrow evening),
each checked in the world, one after another."""

from __future__ import annotations

from typing import Any

from checks import (
    Request,
    World,
    _bytes_told,
    _kept,
    _listed,
    _named_after,
    _recalled,
    _replied,
    _says,
)
from errands import _at_minutes, _cron, _holds, _no_trigger, _prints, _tomorrow_at, _trigger

PILLS = ("pill", "medicine", "medication", "\u836f")  # 药
SWIM = ("\u6e38\u6cf3", "swim")  # 游泳
KIDS = ("kid", "child", "pick")
WEEKDAYS = ("1-5", "mon-fri", "1,2,3,4,5")


def _weekdays_at_eight(schedule: dict[str, Any], world: World) -> bool:
    cron = (schedule.get("cron") or "").lower().split()
    return len(cron) == 5 and _cron("0", "8", "*", "*", cron[4])(schedule, world) and \
        cron[4] in WEEKDAYS


def _characters(world: World) -> tuple[bool, str]:
    path, source = world.work / "chars.txt", world.work / "dentist.txt"
    if not path.is_file():
        return False, "chars.txt not written"
    text = source.read_text(errors="replace") if source.is_file() else ""
    right = {str(len(text)), str(len(text.rstrip("\n")))}
    held = path.read_text(errors="replace").split()
    return bool(right & set(held)), f"chars.txt holds {held[:3]} (dentist.txt: {sorted(right)})"


DAWN: list[Request] = [
    Request("morning", "morning! how are you doing today?", _replied),
    Request("percent", "what is 15% of 240?", _says("36")),
    Request("dentist", "make a new file dentist.txt and write 'call the dentist' in it",
            _holds("dentist.txt", "call the dentist")),
    Request("size", "what's the size of dentist.txt?", _bytes_told("dentist.txt")),
    Request("range", "write a python script total.py that prints the sum of the numbers from "
            "1 to 100, run it and tell me the result", _prints("total.py", "5050", "5050")),
    Request("pills", "每个工作日早上八点提醒我吃药",
            _trigger(PILLS, _weekdays_at_eight)),
    Request("stretch", "set a reminder 15 minutes from now to stretch my legs",
            _trigger("stretch", _at_minutes(13, 17))),
    Request("swim", "我最喜欢的运动是游泳，帮我记住", _kept("swimming", *SWIM)),
    Request("swim-recall", "我最喜欢什么运动？", _recalled("swimming", *SWIM)),
    Request("workspace", "list everything in my workspace", _listed),
    Request("stretch-off", "never mind the stretching reminder, drop it",
            _no_trigger("stretch")),
    Request("chars", "count how many characters dentist.txt has and save that number in "
            "chars.txt", _characters),
    Request("city", "create a notes file named after the city I live in",
            _named_after("lisbon"), answer="Lisbon"),
    Request("kids", "tomorrow at 6pm remind me to pick up the kids",
            _trigger(KIDS, _tomorrow_at(18))),
]

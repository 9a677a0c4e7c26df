"""An eighth set of everyday requests for the task benchmark (``tasks.py --set noon``): a
power of two, an interval in Chinese, where the person lives said in Chinese and then used in
English (a file named after it), a to-do file added to twice and its words counted, a reminder
for tomorrow, the reminders listed and all of them cancelled, a small script run, a file
deleted in Chinese; each checked in the world, one after another."""

from __future__ import annotations

from typing import Any

from checks import Request, World, _says, script_output
from errands import _lines, _tomorrow_at, _trigger

WATER = ("water", "drink", "\u559d\u6c34")  # 喝水
BANK = "bank"
SHANGHAI = ("\u4e0a\u6d77", "shanghai")  # 上海


def _every_two_hours(schedule: dict[str, Any], _world: World) -> bool:
    cron = (schedule.get("cron") or "").split()
    return schedule.get("interval") == 7200 or \
        (len(cron) == 5 and cron[0] == "0" and cron[1] in ("*/2", "0/2") and cron[2:] == ["*"] * 3)


def _city_kept(world: World) -> tuple[bool, str]:
    kept = any(word in world.memory().lower() for word in SHANGHAI)
    return kept, "memory has Shanghai" if kept else "memory lacks Shanghai"


def _city_file(world: World) -> tuple[bool, str]:
    """A file or folder named after the city the person said they live in, in Chinese."""
    made = [p.name for p in world.work.iterdir()
            if any(word in p.name.lower() for word in SHANGHAI)]
    return bool(made), f"made {made}" if made else "nothing named after Shanghai"


def _words_counted(world: World) -> tuple[bool, str]:
    path = world.work / "todo.txt"
    if not path.is_file():
        return False, "todo.txt not there"
    count = str(len(path.read_text(errors="replace").split()))
    told = count in world.said()
    return told, f"todo.txt has {count} words; the reply " + ("says so" if told else
                                                             f"lacks it: {world.said()[:60]!r}")


def _reminders_listed(world: World) -> tuple[bool, str]:
    said = world.said().lower()
    named = [about for about in (WATER, (BANK,)) if any(word in said for word in about)]
    return len(named) == 2, f"the reply names {len(named)} of the 2 reminders: {said[:60]!r}"


def _none_left(world: World) -> tuple[bool, str]:
    left = world.triggers()
    return not left, f"{len(left)} trigger(s) left" if left else "no trigger left"


def _adds(world: World) -> tuple[bool, str]:
    printed = script_output(world, "add.py")
    if printed is None:
        return False, "add.py not written"
    if printed.strip() != "5":
        return False, f"add.py prints {printed[:30]!r}"
    told = "5" in world.said()
    return told, "add.py prints 5; the reply " + ("says so" if told else "lacks 5")


def _todo_gone(world: World) -> tuple[bool, str]:
    gone = not (world.work / "todo.txt").exists()
    return gone, "todo.txt deleted" if gone else "todo.txt still there"


NOON: list[Request] = [
    Request("power", "what's 2 to the power of 10?", _says("1024")),
    Request("water", "每隔两个小时提醒我喝水", _trigger(WATER, _every_two_hours)),
    Request("city", "我住在上海，请记住", _city_kept),
    Request("city-file", "make a file named after the city I live in", _city_file),
    Request("todo", "add 'buy eggs' to todo.txt", _lines("todo.txt", "buy eggs")),
    Request("todo-more", "also add 'call the bank' to todo.txt",
            _lines("todo.txt", "buy eggs", "call the bank")),
    Request("words", "how many words are in todo.txt?", _words_counted),
    Request("bank", "remind me tomorrow at 9am to call the bank",
            _trigger(BANK, _tomorrow_at(9))),
    Request("reminders", "what reminders do I have?", _reminders_listed),
    Request("cancel-all", "cancel all my reminders", _none_left),
    Request("add", "write a script add.py that prints 2 plus 3, and run it", _adds),
    Request("delete", "删除 todo.txt", _todo_gone),
]

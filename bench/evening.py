"""A sixth set of everyday requests for the task benchmark (``tasks.py --set evening``): the
kinds of the twelve of ``checks.py`` worded as yet another person would (a division, lines
counted, a file copied and read back, a morning reminder given as "7:30", a delay in words and
one in Chinese, a weekly reminder in Chinese, a preference in Chinese recalled in Chinese, a
folder named after the person's answer), each checked in the world, one after another."""

from __future__ import annotations

from typing import Any

from checks import Request, World, _listed, _replied, _says
from errands import _at_minutes, _cron, _lines, _no_trigger, _prints, _trigger

TEA = "\u7eff\u8336"  # 绿茶: green tea
STOVE = ("stove", "fire", "heat", "\u5173\u706b", "\u706b")  # 关火: turn off the stove
TRASH = ("trash", "garbage", "rubbish", "\u5783\u573e")  # 垃圾


def _tea_kept(world: World) -> tuple[bool, str]:
    kept = TEA in world.memory() or "green tea" in world.memory().lower()
    return kept, "memory has green tea" if kept else "memory lacks green tea"


def _tea_recalled(world: World) -> tuple[bool, str]:
    said = world.said()
    told = TEA in said or "green tea" in said.lower()
    return told, f"reply {'names' if told else 'lacks'} green tea: {said[:60]!r}"


def _lines_counted(world: World) -> tuple[bool, str]:
    said = world.said()
    told = "3" in said or "three" in said.lower()
    return told, "the reply " + ("has 3" if told else f"lacks 3: {said[:60]!r}")


def _backup_read(world: World) -> tuple[bool, str]:
    copied = _lines("backup.txt", "eggs", "bread", "milk")(world)
    if not copied[0]:
        return copied
    said = world.said().lower()
    told = all(word in said for word in ("eggs", "bread", "milk"))
    return told, "backup.txt right; the reply " + ("has its lines" if told else
                                                    f"lacks its lines: {said[:60]!r}")


def _sunday_at_8pm(schedule: dict[str, Any], world: World) -> bool:
    return any(_cron("0", "20", "*", "*", day)(schedule, world) for day in ("0", "7"))


def _season_folder(world: World) -> tuple[bool, str]:
    """A folder named after the season the person names when asked: winter, no model's guess."""
    made = [p.name for p in world.work.iterdir() if p.is_dir() and "winter" in p.name.lower()]
    return bool(made), f"made {made}" if made else "no folder named after winter"


EVENING: list[Request] = [
    Request("greeting", "hey there, how's it going?", _replied),
    Request("divide", "what's 156 divided by 12?", _says("13")),
    Request("shopping", "make a file shopping.txt with eggs, bread and milk on separate lines",
            _lines("shopping.txt", "eggs", "bread", "milk")),
    Request("count", "how many lines does shopping.txt have?", _lines_counted),
    Request("squares", "create a python script squares.py that prints the squares of 1 to 5, "
            "then run it", _prints("squares.py", "1 4 9 16 25", "16")),
    Request("vitamins", "remind me every morning at 7:30 to take my vitamins",
            _trigger("vitamin", _cron("30", "7", "*", "*", "*"))),
    Request("mom", "in twenty minutes remind me to call mom", _trigger("mom", _at_minutes(18, 22))),
    Request("stove", "20分钟后提醒我关火", _trigger(STOVE, _at_minutes(18, 22))),
    Request("tea", "记住我喜欢喝绿茶", _tea_kept),
    Request("tea-recall", "我喜欢喝什么茶？", _tea_recalled),
    Request("files", "what files do I have?", _listed),
    Request("vitamins-cancel", "cancel the vitamins reminder", _no_trigger("vitamin")),
    Request("backup", "copy shopping.txt to backup.txt and tell me what backup.txt contains",
            _backup_read),
    Request("season", "make a folder named after my favourite season", _season_folder,
            answer="winter"),
    Request("trash", "每周日晚上8点提醒我倒垃圾", _trigger(TRASH, _sunday_at_8pm)),
]

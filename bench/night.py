"""A ninth set of everyday requests for the task benchmark (``tasks.py --set night``): the kinds
of the others worded once more (a unit conversion, a list file added to and its lines counted,
a greeting script, a weekly meeting in Chinese, a delay in minutes, a birthday kept in Chinese
and recalled, the folder listed, a reminder stopped, a file moved into a new folder, a file
named after the person's answer, tomorrow morning), each checked in the world, one after
another. The greeting is worded as in the evening set, the lines counted nearly so."""

from __future__ import annotations

from checks import (
    Request,
    World,
    _kept,
    _listed,
    _named_after,
    _recalled,
    _replied,
    _says,
)
from errands import _at_minutes, _cron, _lines, _no_trigger, _prints, _tomorrow_at, _trigger

MEETING = ("meeting", "\u5468\u4f1a", "\u5f00\u4f1a")  # 周会, 开会
BIRTHDAY = ("5\u67083", "may 3", "3 may", "05-03", "5/3")  # 5月3
RUN = ("run", "jog", "\u8dd1")  # 跑


def _lines_counted(world: World) -> tuple[bool, str]:
    path = world.work / "shopping.txt"
    if not path.is_file():
        return False, "shopping.txt not there"
    count = str(len([line for line in path.read_text(errors="replace").splitlines()
                     if line.strip()]))
    told = count in world.said()
    return told, f"shopping.txt has {count} lines; the reply " + (
        "says so" if told else f"lacks it: {world.said()[:60]!r}")


def _moved(world: World) -> tuple[bool, str]:
    old = (world.work / "shopping.txt").exists()
    new = (world.work / "archive" / "shopping.txt").is_file()
    return new and not old, f"shopping.txt {'still there' if old else 'gone'}, " \
                            f"archive/shopping.txt {'there' if new else 'missing'}"


NIGHT: list[Request] = [
    Request("hello", "hey there, how's it going?", _replied),
    Request("seconds", "how many seconds are in 3 hours?", _says("10800")),
    Request("shopping", "create shopping.txt with milk, bread and apples, each on its own line",
            _lines("shopping.txt", "milk", "bread", "apples")),
    Request("shopping-more", "append cheese to shopping.txt",
            _lines("shopping.txt", "milk", "bread", "apples", "cheese")),
    Request("lines", "how many lines does shopping.txt have now?", _lines_counted),
    Request("greet", "make a python script greet.py that prints hi there, then run it",
            _prints("greet.py", "hi there", "hi there")),
    Request("meeting", "请在每周一上午10点提醒我开周会",
            _trigger(MEETING, _cron("0", "10", "*", "*", "1"))),
    Request("laundry", "in 20 minutes, remind me to take the laundry out",
            _trigger("laundry", _at_minutes(18, 22))),
    Request("birthday", "记住我的生日是5月3日", _kept("May 3", *BIRTHDAY)),
    Request("birthday-recall", "我的生日是哪天？", _recalled("May 3", *BIRTHDAY)),
    Request("folder", "what files do I have?", _listed),
    Request("laundry-stop", "stop the laundry reminder, I already did it",
            _no_trigger("laundry")),
    Request("archive", "make a folder called archive and move shopping.txt into it", _moved),
    Request("cat", "create an empty file named after my cat", _named_after("Miso"),
            answer="Miso"),
    Request("run", "remind me tomorrow at 7am to go for a run", _trigger(RUN, _tomorrow_at(7))),
]

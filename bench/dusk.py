"""A tenth set of everyday requests for the task benchmark (``tasks.py --set dusk``): the kinds
of the others worded once more (a sum, a note written and weighed in bytes, a shell script run,
a nightly reminder in Chinese with the hour in Chinese numerals, half an hour from now, a taste
kept in Chinese and recalled, the folder shown, a reminder called off, a number counted from one
file into another, a file named after the person's answer, tomorrow at half past eight), each
checked in the world, one after another."""

from __future__ import annotations

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
    script_output,
)
from errands import _at_minutes, _cron, _holds, _no_trigger, _tomorrow_at, _trigger

SLEEP = ("sleep", "bed", "\u7761")  # 睡
TEA = ("\u7eff\u8336", "green tea")  # 绿茶
PLANTS = ("plant", "water")


def _shell(world: World) -> tuple[bool, str]:
    ran = script_output(world, "night.sh")
    if ran is None:
        return False, "night.sh not written"
    printed = ran.strip().lower()
    if "good night" not in printed:
        return False, f"night.sh prints {printed[:40]!r}"
    told = "good night" in world.said().lower()
    return told, "night.sh runs; the reply " + ("has its output" if told else "lacks it")


def _counted(world: World) -> tuple[bool, str]:
    path = world.work / "count.txt"
    if not path.is_file():
        return False, "count.txt not written"
    text = path.read_text(errors="replace").strip()
    words = str(len((world.work / "rent.txt").read_text(errors="replace").split())) \
        if (world.work / "rent.txt").is_file() else "?"
    return words in text.split(), f"count.txt holds {text[:20]!r} (rent.txt has {words} words)"


DUSK: list[Request] = [
    Request("thanks", "thanks, you've been really helpful today", _replied),
    Request("sum", "what's 7 squared minus 9?", _says("40")),
    Request("rent", "put the text 'pay rent' in a file called rent.txt",
            _holds("rent.txt", "pay rent")),
    Request("weigh", "how big is rent.txt in bytes?", _bytes_told("rent.txt")),
    Request("shell", "write a shell script night.sh that echoes good night, and execute it",
            _shell),
    Request("sleep", "每天晚上十点提醒我睡觉", _trigger(SLEEP, _cron("0", "22", "*", "*", "*"))),
    Request("soup", "ping me in half an hour to check the soup",
            _trigger("soup", _at_minutes(28, 32))),
    Request("tea", "我喜欢喝绿茶，记一下", _kept("green tea", *TEA)),
    Request("tea-recall", "我喜欢喝什么茶？", _recalled("green tea", *TEA)),
    Request("show", "show me what's in my folder", _listed),
    Request("soup-off", "cancel the soup reminder", _no_trigger("soup")),
    Request("count", "count the words in rent.txt and write the number into count.txt",
            _counted),
    Request("colour", "create a text file named after my favourite colour",
            _named_after("teal"), answer="teal"),
    Request("plants", "remind me to water the plants tomorrow at 8:30",
            _trigger(PLANTS, _tomorrow_at(8, 30))),
]

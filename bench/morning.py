"""A seventh set of everyday requests for the task benchmark (``tasks.py --set morning``): the
kinds of the twelve of ``checks.py`` worded as yet another person would (a percentage, a
file's size in bytes, a countdown script, a daily reminder given as "6pm", a delay in
minutes, a weekday reminder in Chinese at a half hour, a fact about the person in Chinese
recalled in Chinese, a two-step job whose second step adds up the first's numbers, a file
named after the person's answer, a rename, tomorrow afternoon), each checked in the world,
one after another."""

from __future__ import annotations

from checks import Request, World, _listed, _replied, _says
from errands import _at_minutes, _cron, _lines, _no_trigger, _prints, _tomorrow_at, _trigger

PEANUT = ("\u82b1\u751f", "peanut")  # 花生
PARCEL = ("parcel", "package", "delivery", "\u5feb\u9012")  # 快递
CLOCK_IN = ("clock", "punch", "check in", "\u6253\u5361")  # 打卡
FOX = "the quick brown fox"


def _fox_measured(world: World) -> tuple[bool, str]:
    path = world.work / "fox.txt"
    if not path.is_file():
        return False, "fox.txt not written"
    text = path.read_text(errors="replace")
    if FOX not in text.lower():
        return False, f"fox.txt holds {text[:40]!r}"
    size = path.stat().st_size
    told = str(size) in world.said()
    return told, f"fox.txt written ({size} bytes); the reply " + \
        ("says so" if told else f"lacks {size}: {world.said()[:60]!r}")


def _peanut_kept(world: World) -> tuple[bool, str]:
    kept = any(word in world.memory().lower() for word in PEANUT)
    return kept, "memory has peanuts" if kept else "memory lacks peanuts"


def _peanut_recalled(world: World) -> tuple[bool, str]:
    said = world.said()
    told = any(word in said.lower() for word in PEANUT)
    return told, f"reply {'names' if told else 'lacks'} peanuts: {said[:60]!r}"


def _summed(world: World) -> tuple[bool, str]:
    numbers = _lines("numbers.txt", *map(str, range(1, 11)))(world)
    if not numbers[0]:
        return numbers
    path = world.work / "total.txt"
    if not path.is_file():
        return False, "numbers.txt right; total.txt not written"
    text = path.read_text(errors="replace").strip()
    return text in ("55", "55.0"), f"numbers.txt right; total.txt holds {text[:20]!r}"


def _pet_file(world: World) -> tuple[bool, str]:
    """A file named after the pet's name the person gives when asked: Biscuit, no model's
    guess."""
    made = [p.name for p in world.work.iterdir() if "biscuit" in p.name.lower()]
    return bool(made), f"made {made}" if made else "no file named after Biscuit"


def _renamed(world: World) -> tuple[bool, str]:
    old, new = (world.work / "fox.txt").exists(), (world.work / "animals.txt").is_file()
    return new and not old, f"fox.txt {'still there' if old else 'gone'}, animals.txt " \
                            f"{'there' if new else 'missing'}"


MORNING: list[Request] = [
    Request("greeting", "good morning!", _replied),
    Request("percent", "what is 15% of 240?", _says("36")),
    Request("fox", f"write '{FOX}' into fox.txt and tell me how many bytes the file has",
            _fox_measured),
    Request("countdown", "write a script countdown.py that prints the numbers from 5 down to 1, "
            "and run it", _prints("countdown.py", "5 4 3 2 1", "4 3 2")),
    Request("dog", "set a reminder at 6pm every day to walk the dog",
            _trigger("dog", _cron("0", "18", "*", "*", "*"))),
    Request("oven", "remind me to check the oven in 45 minutes",
            _trigger("oven", _at_minutes(43, 47))),
    Request("peanut", "请记住我对花生过敏", _peanut_kept),
    Request("peanut-recall", "我对什么过敏？", _peanut_recalled),
    Request("files", "show me what's in my work folder", _listed),
    Request("dog-cancel", "I don't need the dog walking reminder anymore, please remove it",
            _no_trigger("dog")),
    Request("sum", "put the numbers 1 to 10 in numbers.txt, one per line, then write their sum "
            "to total.txt", _summed),
    Request("pet", "create a text file named after my pet", _pet_file, answer="Biscuit"),
    Request("clock-in", "每个工作日早上8点半提醒我打卡",
            _trigger(CLOCK_IN, _cron("30", "8", "*", "*", "1-5"))),
    Request("rename", "rename fox.txt to animals.txt", _renamed),
    Request("parcel", "明天下午3点提醒我去取快递", _trigger(PARCEL, _tomorrow_at(15))),
]

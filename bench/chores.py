"""A third set of everyday requests for the task benchmark (``tasks.py --set chores``): a file
copied and counted, a CSV written and averaged, a script printing a greeting, the person's
reminders listed, a weekly and a half-hour reminder, a date kept in Chinese and recalled, the
work directory listed in Chinese, a file removed; each checked in the world, one after another
as a person sends them."""

from __future__ import annotations

from checks import Request, World, _listed, _says, script_output
from errands import _at_minutes, _cron, _lines, _no_trigger, _trigger


def _hello_script(world: World) -> tuple[bool, str]:
    printed = script_output(world, "hello.py")
    if printed is None:
        return False, "hello.py not written"
    if "hello, world" not in printed.lower():
        return False, f"hello.py prints {printed[:50]!r}"
    said = "hello, world" in world.said().lower()
    return said, "hello.py runs; the reply " + ("has its output" if said else "lacks its output")


def _copied(world: World) -> tuple[bool, str]:
    source, copy = world.work / "shopping.txt", world.work / "backup.txt"
    if not copy.is_file():
        return False, "backup.txt not written"
    same = source.is_file() and copy.read_bytes() == source.read_bytes()
    return same, "backup.txt is a copy of shopping.txt" if same else \
        f"backup.txt holds {copy.read_text(errors='replace')[:40]!r}"


def _scores(world: World) -> tuple[bool, str]:
    path = world.work / "scores.csv"
    if not path.is_file():
        return False, "scores.csv not written"
    rows = [line.replace(" ", "").lower() for line in
            path.read_text(errors="replace").splitlines() if line.strip()]
    if rows != ["name,score", "ann,90", "bob,85"]:
        return False, f"scores.csv holds {rows}"
    said = "87.5" in world.said()
    return said, "scores.csv right; the reply " + ("has 87.5" if said else "lacks 87.5")


MAY_3 = ("5月3", "5 月 3", "May 3", "5/3", "05-03", "3 May")  # the birthday, as written


def _birthday_kept(world: World) -> tuple[bool, str]:
    kept = any(form in world.memory() for form in MAY_3)
    return kept, "memory has the birthday" if kept else "memory lacks the birthday"


def _birthday_said(world: World) -> tuple[bool, str]:
    said = world.said()
    right = any(form in said for form in MAY_3)
    return right, f"reply {'has' if right else 'lacks'} May 3: {said[:60]!r}"


def _reminders_named(world: World) -> tuple[bool, str]:
    said = world.said().lower()
    missing = [word for word in ("back", "pizza") if word not in said]
    return not missing, f"reply lacks {missing}: {said[:80]!r}" if missing else \
        "both reminders named"


def _backup_gone(world: World) -> tuple[bool, str]:
    gone = not (world.work / "backup.txt").exists()
    return gone, "backup.txt deleted" if gone else "backup.txt still there"


CHORES: list[Request] = [
    Request("power", "what's 2 to the power of 10?", _says("1024")),
    Request("shopping", "create a file shopping.txt with eggs, bread and cheese, one per line",
            _lines("shopping.txt", "eggs", "bread", "cheese")),
    Request("hello", "write hello.py that prints Hello, World! then run it and show me the "
            "output", _hello_script),
    Request("count", "how many lines does shopping.txt have?", _says("3")),
    Request("friday", "remind me every Friday at 5pm to back up my laptop",
            _trigger("back", _cron("0", "17", "*", "*", "5"))),
    Request("pizza", "in 30 minutes remind me to take the pizza out",
            _trigger("pizza", _at_minutes(28, 32))),
    Request("birthday", "记住我的生日是5月3日", _birthday_kept),
    Request("copy", "copy shopping.txt to backup.txt", _copied),
    Request("reminders", "what reminders do I have?", _reminders_named),
    Request("pizza-cancel", "cancel the pizza reminder", _no_trigger("pizza")),
    Request("scores", "make scores.csv with the header name,score and two rows ann,90 and "
            "bob,85, then tell me the average score", _scores),
    Request("birthday-recall", "when is my birthday?", _birthday_said),
    Request("list-zh", "工作目录里有哪些文件？", _listed),
    Request("remove", "remove backup.txt", _backup_gone),
]

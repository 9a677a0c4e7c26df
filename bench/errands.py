"""More everyday requests for the task benchmark (``tasks.py --set errands``): other errands
than the twelve of ``checks.py``, each checked in the world the same way. Files changed in
place (renamed, a line added), folders, a weekly and a weekday schedule, a reminder in hours and
one for tomorrow, a preference kept and recalled, the day of the week, a question that needs
the person's answer; in English and Chinese, one after another as a person sends them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from checks import Check, Request, World, _says, script_output

WEEKDAYS_ZH = "一二三四五六日"


def _lines(name: str, *lines: str) -> Check:
    def check(world: World) -> tuple[bool, str]:
        path = world.work / name
        if not path.is_file():
            return False, f"{name} not written"
        held = [line.strip().lower() for line in path.read_text(errors="replace").splitlines()
                if line.strip()]
        return held == [line.lower() for line in lines], f"{name} holds {held}"
    return check


# what joins the items of a list in a reply ("2, 4, 6, 8, and 10" says "2 4 6 8 10")
_LIST_JOINS = re.compile(r"[,，、]|\band\b|和")


def _prints(name: str, words: str, said: str) -> Check:
    """The script ``name`` prints ``words`` (split on blanks), and a reply says ``said``
    (its items maybe joined by commas and "and")."""
    def check(world: World) -> tuple[bool, str]:
        printed = script_output(world, name)
        if printed is None:
            return False, f"{name} not written"
        if printed.split() != words.split():
            return False, f"{name} prints {printed[:50]!r}"
        told = said in " ".join(_LIST_JOINS.sub(" ", world.said()).split())
        return told, f"{name} runs; the reply " + ("has its output" if told else
                                                    "lacks its output")
    return check


def _trigger(about: str | tuple[str, ...], schedule_ok: Any) -> Check:
    """A trigger whose prompt names ``about`` (or one of its words), its schedule accepted by
    ``schedule_ok``."""
    def check(world: World) -> tuple[bool, str]:
        for trigger in world.triggers():
            if _names(trigger["prompt"], about):
                schedule = trigger.get("schedule") or {}
                return bool(schedule_ok(schedule, world)), f"schedule {schedule}"
        return False, f"no trigger about {about}"
    return check


def _names(prompt: str, about: str | tuple[str, ...]) -> bool:
    return any(word in prompt.lower() for word in ((about,) if isinstance(about, str) else about))


def _holds(name: str, words: str) -> Check:
    """The file ``name`` holds ``words`` (any case)."""
    def check(world: World) -> tuple[bool, str]:
        path = world.work / name
        if not path.is_file():
            return False, f"{name} not written"
        text = path.read_text(errors="replace")
        return words.lower() in text.lower(), f"{name} holds {text[:30]!r}"
    return check


def _cron(*fields: str) -> Any:
    def ok(schedule: dict[str, Any], _world: World) -> bool:
        cron = (schedule.get("cron") or "").split()
        return [f.lstrip("0") or "0" for f in cron[:2]] + cron[2:] == list(fields)
    return ok


def _at_minutes(low: float, high: float) -> Any:
    def ok(schedule: dict[str, Any], world: World) -> bool:
        run_at = schedule.get("runAt")
        late = run_at and (datetime.fromisoformat(run_at) - world.sent_at) / timedelta(minutes=1)
        return bool(run_at) and low <= late <= high
    return ok


def _tomorrow_at(hour: int, minute: int = 0) -> Any:
    def ok(schedule: dict[str, Any], world: World) -> bool:
        run_at = schedule.get("runAt")
        if not run_at:
            return False
        at = datetime.fromisoformat(run_at)
        return (at.date(), at.hour, at.minute) == \
            ((world.sent_at + timedelta(days=1)).date(), hour, minute)
    return ok


def _hourly(schedule: dict[str, Any], _world: World) -> bool:
    cron = (schedule.get("cron") or "").split()
    return schedule.get("interval") == 3600 or \
        (len(cron) == 5 and cron[0] == "0" and cron[1:] == ["*"] * 4)


def _no_trigger(about: str | tuple[str, ...]) -> Check:
    def check(world: World) -> tuple[bool, str]:
        left = [t for t in world.triggers() if _names(t["prompt"], about)]
        return not left, f"{len(left)} trigger(s) about {about} left" if left else \
            f"no trigger about {about} left"
    return check


def _renamed(world: World) -> tuple[bool, str]:
    old, new = (world.work / "todo.md").exists(), (world.work / "tasks.md").is_file()
    return new and not old, f"todo.md {'still there' if old else 'gone'}, tasks.md " \
                            f"{'there' if new else 'missing'}"


def _folder(world: World) -> tuple[bool, str]:
    made = (world.work / "photos").is_dir()
    return made, "photos/ made" if made else "no folder photos"


def _deleted(world: World) -> tuple[bool, str]:
    gone = not (world.work / "hello.txt").exists()
    return gone, "hello.txt deleted" if gone else "hello.txt still there"


def _vim_kept(world: World) -> tuple[bool, str]:
    kept = "vim" in world.memory().lower()
    return kept, "memory has vim" if kept else "memory lacks vim"


def _weekday(world: World) -> tuple[bool, str]:
    day = WEEKDAYS_ZH[datetime.now(UTC).weekday()]
    said = world.said()
    right = any(f"{word}{day}" in said for word in ("星期", "周", "礼拜"))
    return right, f"reply {'names' if right else 'does not name'} 星期{day}: {said[:40]!r}"


ERRANDS: list[Request] = [
    Request("todo", "create todo.md with three lines: buy milk, call mom, pay rent",
            _lines("todo.md", "buy milk", "call mom", "pay rent")),
    Request("divide", "what's 144 divided by 12?", _says("12")),
    Request("squares", "write squares.py that prints the squares of the numbers 1 to 5, run "
            "it, and tell me what it printed", _prints("squares.py", "1 4 9 16 25", "25")),
    Request("weekly", "every Monday at 8am remind me to send the weekly report",
            _trigger("report", _cron("0", "8", "*", "*", "1"))),
    Request("hours", "remind me in 2 hours to check the oven",
            _trigger("oven", _at_minutes(115, 125))),
    Request("editor", "remember that my favorite editor is vim", _vim_kept),
    Request("editor-recall", "which editor do I prefer?", _says("vim")),
    Request("rename", "rename todo.md to tasks.md", _renamed),
    Request("report-cancel", "I no longer need the weekly report reminder, cancel it",
            _no_trigger("report")),
    Request("append", "add a line 'walk the dog' at the end of tasks.md",
            _lines("tasks.md", "buy milk", "call mom", "pay rent", "walk the dog")),
    Request("weekday", "今天是星期几？", _weekday),
    Request("folder", "make a folder called photos", _folder),
    Request("name", "write my name into name.txt", _holds("name.txt", "ada"), answer="Ada"),
    Request("zh-file", "创建一个文件 hello.txt，内容是：你好",
            _holds("hello.txt", "你好")),
    Request("weekdays", "every weekday at 7:30 remind me to check my email",
            _trigger("email", _cron("30", "7", "*", "*", "1-5"))),
    Request("hourly", "remind me to stand up every hour", _trigger("stand", _hourly)),
    Request("tomorrow", "tomorrow at 8am remind me to water the plants",
            _trigger("plants", _tomorrow_at(8))),
    Request("read", "what does hello.txt say?", _says("你好")),
    Request("delete", "delete hello.txt", _deleted),
    Request("email-cancel", "cancel the email reminder", _no_trigger("email")),
]

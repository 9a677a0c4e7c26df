"""A fourth set of everyday requests for the task benchmark (``tasks.py --set household``): the
kinds of the twelve of ``checks.py`` with other things in them (a grocery list measured, a
script counting, a nightly reminder set in Chinese, an allergy kept and recalled, numbers summed,
a file named after a pet), and the date asked; each checked in the world, one after another as a
person sends them."""

from __future__ import annotations

from datetime import UTC, datetime

from checks import Check, Request, World, _listed, _replied, _says
from errands import _at_minutes, _cron, _lines, _no_trigger, _prints, _trigger


def _size_said(name: str, *lines: str) -> Check:
    """The reply says the size of ``name``, which still holds ``lines`` (asked for its size,
    nothing was to change it)."""
    def check(world: World) -> tuple[bool, str]:
        held = _lines(name, *lines)(world)
        if not held[0]:
            return False, f"changed: {held[1]}"
        size = (world.work / name).stat().st_size
        said = str(size) in world.said()
        return said, f"{name} is {size} bytes; the reply {'says' if said else 'lacks'} it"
    return check


LIGHTS = ("light", "\u706f")  # \u706f: lamp, as in "关灯"


def _peanuts_kept(world: World) -> tuple[bool, str]:
    memory = world.memory().lower()
    kept = "peanut" in memory or "\u82b1\u751f" in memory  # \u82b1\u751f: peanut
    return kept, "memory has peanuts" if kept else "memory lacks peanuts"


def _summed(world: World) -> tuple[bool, str]:
    written = _lines("nums.txt", "3", "7", "12")(world)
    if not written[0]:
        return written
    said = "22" in world.said()
    return said, "nums.txt right; the reply " + ("has 22" if said else "lacks 22")


def _pet_file(world: World) -> tuple[bool, str]:
    """A file named after the pet the person names when asked: Biscuit, no model's guess."""
    made = [p.name for p in world.work.iterdir() if "biscuit" in p.name.lower()]
    if made:
        return True, f"made {made}"
    new = [p.name for p in world.work.iterdir()
           if p.is_file() and p.stat().st_mtime >= world.sent_at.timestamp()]
    return False, f"no file named after Biscuit (made {new})" if new else \
        "no file named after Biscuit"


def _date_said(world: World) -> tuple[bool, str]:
    today = datetime.now(UTC).date()
    forms = (today.isoformat(), f"{today:%B} {today.day}", f"{today.day} {today:%B}",
             f"{today.month}月{today.day}日", f"{today.month}/{today.day}")
    said = world.said()
    right = any(form.lower() in said.lower() for form in forms)
    return right, f"reply {'has' if right else 'lacks'} today's date: {said[:60]!r}"


HOUSEHOLD: list[Request] = [
    Request("greeting", "hey there, how's it going?", _replied),
    Request("minus", "what is 256 minus 89?", _says("167")),
    Request("groceries", "make a file groceries.txt listing apples, milk and rice, each on its "
            "own line", _lines("groceries.txt", "apples", "milk", "rice")),
    Request("size", "how big is groceries.txt in bytes?",
            _size_said("groceries.txt", "apples", "milk", "rice")),
    Request("count", "create count.py that prints the numbers 1 to 5 on one line, separated "
            "by spaces; run it and tell me the output",
            _prints("count.py", "1 2 3 4 5", "1 2 3 4 5")),
    Request("nightly", "每天晚上10点提醒我关灯",
            _trigger(LIGHTS, _cron("0", "22", "*", "*", "*"))),
    Request("plumber", "set a reminder 20 minutes from now to call the plumber",
            _trigger("plumber", _at_minutes(18, 22))),
    Request("allergy", "please remember that I'm allergic to peanuts", _peanuts_kept),
    Request("allergy-recall", "what am I allergic to?", _says("peanut")),
    Request("date", "what's the date today?", _date_said),
    Request("folder-list", "what's in my working directory right now?", _listed),
    Request("lights-cancel", "never mind the lights reminder, delete it",
            _no_trigger(LIGHTS)),
    Request("sum", "write the numbers 3, 7 and 12 into nums.txt, one per line, then tell me "
            "their sum", _summed),
    Request("pet", "create a file named after my dog", _pet_file, answer="Biscuit"),
    Request("plumber-cancel", "cancel the plumber reminder", _no_trigger("plumber")),
]

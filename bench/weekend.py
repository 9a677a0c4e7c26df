"""A fifth set of everyday requests for the task benchmark (``tasks.py --set weekend``): the
kinds of the twelve of ``checks.py`` worded as yet another person would (a sum asked as "how
much", a file's size asked as its size, a weekly reminder in Chinese and one cancelled in
Chinese, a reminder's time given last, a fact to "keep in mind", a script that "executes", a
reminder dropped as "no longer needed"), each checked in the world, one after another."""

from __future__ import annotations

from datetime import UTC, datetime

from checks import Request, World, _listed, _replied, _says
from errands import _at_minutes, _cron, _lines, _no_trigger, _prints, _trigger
from household import _size_said

RENT = ("rent", "\u623f\u79df")  # \u623f\u79df: rent, as in "交房租"


def _rust_kept(world: World) -> tuple[bool, str]:
    kept = "rust" in world.memory().lower()
    return kept, "memory has Rust" if kept else "memory lacks Rust"


def _words_counted(world: World) -> tuple[bool, str]:
    written = _lines("words.txt", "the quick brown fox")(world)
    if not written[0]:
        return written
    said = world.said()
    told = "4" in said or "four" in said.lower()
    return told, "words.txt right; the reply " + ("has 4" if told else f"lacks 4: {said[:60]!r}")


def _city_file(world: World) -> tuple[bool, str]:
    """A file named after the city the person names when asked: Lisbon, no model's guess."""
    made = [p.name for p in world.work.iterdir() if "lisbon" in p.name.lower()]
    return bool(made), f"made {made}" if made else "no file named after Lisbon"


def _weekday_en(world: World) -> tuple[bool, str]:
    day = f"{datetime.now(UTC):%A}"
    said = world.said()
    named = day.lower() in said.lower()
    return named, f"reply {'names' if named else 'lacks'} {day}: {said[:50]!r}"


WEEKEND: list[Request] = [
    Request("greeting", "good morning! what can you help me with?", _replied),
    Request("plus", "how much is 48 plus 75?", _says("123")),
    Request("colors", "put red, green and blue into colors.txt, one per line",
            _lines("colors.txt", "red", "green", "blue")),
    Request("size", "what's the file size of colors.txt?",
            _size_said("colors.txt", "red", "green", "blue")),
    Request("evens", "write evens.py to print the even numbers from 2 to 10, execute it and "
            "give me the result", _prints("evens.py", "2 4 6 8 10", "2 4 6 8 10")),
    Request("rent", "每周三下午3点提醒我交房租", _trigger(RENT, _cron("0", "15", "*", "*", "3"))),
    Request("laundry", "remind me to check the laundry in 45 minutes",
            _trigger("laundry", _at_minutes(43, 47))),
    Request("language", "keep in mind that my favourite programming language is Rust",
            _rust_kept),
    Request("language-recall", "which programming language do I like best?", _says("rust")),
    Request("weekday", "what day of the week is it?", _weekday_en),
    Request("files", "show me the files in my workspace", _listed),
    Request("laundry-cancel", "I don't need the laundry reminder anymore, remove it",
            _no_trigger("laundry")),
    Request("words", "create words.txt containing the sentence 'the quick brown fox', then "
            "count its words and tell me", _words_counted),
    Request("city", "make a file named after the city I live in", _city_file, answer="Lisbon"),
    Request("rent-cancel", "取消交房租的提醒", _no_trigger(RENT)),
]

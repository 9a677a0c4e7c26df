"""Numbers and file names a Worker's result copies from the examples of its instructions that
nothing its run was given or shown holds: neither its task, nor a call's arguments, nor a call's
result, nor a count of what a result lists. A small model fills a report in from its examples:
after listing a folder that held ``countdown.py`` and ``fox.txt``, the 1.5B model ended
``done`` with "fox.txt holds fox: 12 bytes." (the file had 19; "12 bytes" is an example's), and
another time with "The work directory contains count.py and fox.txt." (``count.py`` is an
example's file), and the person was told so. Told once instead, it ended failed with the
runtime's words as its error, though the listing was done. The sentences that give such a
number or name are left out of the result; what the run did is told beside it
(``lifecycle.actions``); the first time, the Worker is told so instead, and its next answer
runs something (asked to copy shopping.txt and tell how many lines it has, the 1.5B model
copied it and reported "3 lines" that no call had shown: left out, the count was never told).

A number no example gives stands (a sum the model worked out, "22"), and so does one that
counts what a result showed ("2 files" after a listing of two entries).

A result that says nothing of what the run's last call showed is sent back once
(``says_nothing_of``): the 0.5B model wrote "The folder is empty." before it listed the folder,
and ended ``done`` with it after a listing of four files."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from mimikit.tools.reply_checks import without_sentences
from mimikit.workspace.named import named_paths
from mimikit.workspace.written import WRITTEN

# A number as written: digits, with the separators inside it ("1,024", "3.5"), read without
# the thousands' commas so that "10,800" and "10800" are one number; not the digits of a
# name or an id ("python3", "task-3f2a…": a run's ids would show numbers at random). A date
# or a time of the clock is one number: a Worker is shown today's date, and in December the
# 0.5B model's "dentist.txt is 12 bytes" (an example's size; wc printed 16) was taken for
# a number its run showed, the month of "2026-12-03".
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{4}-\d\d-\d\d(?!\d)|\d{1,2}:\d\d(?::\d\d)?(?!\d)"
                     r"|\d+(?:[.,]\d+)*(?![A-Za-z0-9_]))")
# What a result is where every sentence went: not the values left out, which a small model
# then tells as facts (told "Its result gave count.py, which nothing its run showed.", the
# 1.5B model reported that the folder held count.py).
LEFT_OUT = "Its result gave what nothing its run showed, and was left out."
# A word of a result matched against what a call showed: a number, a name or a word of four
# letters or more, lowercased ("the", "is" and "a" would match any text).
_WORD = re.compile(r"[a-z0-9_]+(?:[.\-/][a-z0-9_]+)*")
WORD_LETTERS = 4


def numbers(text: str) -> list[str]:
    """The numbers ``text`` writes, each once, in order (thousands' commas left out)."""
    return list(dict.fromkeys(found.replace(",", "") for found in _NUMBER.findall(text)))


def facts(text: str) -> list[str]:
    """The numbers and the file names ``text`` writes, each once, in order."""
    return [*numbers(text), *named_paths(text)]


def held_to_seen(said: str, seen: Iterable[str], examples: str = "") -> str:
    """``said`` without its sentences that give a number or a file name ``examples`` (the run's
    instructions) give and none of ``seen`` (the run's task, calls and their results) writes
    or counts; where none is left, a sentence that says so (``LEFT_OUT``). ``said`` itself
    when it gives no such number or name."""
    copied = set(unseen(said, seen, examples))
    if not copied:
        return said
    kept = without_sentences(said, lambda sentence: not copied.isdisjoint(facts(sentence)))
    return kept or LEFT_OUT


def unseen(said: str, seen: Iterable[str], examples: str = "") -> list[str]:
    """The numbers and file names ``said`` gives that ``examples`` give and none of ``seen``
    writes or counts, in order."""
    shown = {fact for text in seen for fact in shown_by(text)}
    copied = set(facts(examples)) - shown
    return [fact for fact in facts(said) if fact in copied]


def shown_by(text: str) -> set[str]:
    """The numbers and file names ``text`` writes and, where it is JSON (a call's arguments or
    result), those of its texts as decoded (a command's output "5\\n4\\n3" writes 4 and 3) and
    what it counts: the items of each of its lists, and the lines and words of each of its
    texts ("2" for a listing of two entries)."""
    found = set(facts(text))
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return found
    texts = _texts(value)
    return found.union(*(facts(item) for item in texts), _counted(value, texts))


def says_nothing_of(said: str, shown: str) -> bool:
    """Whether ``said`` shares no number, file name or word (``_WORD``) with ``shown``, a
    reading call's result (as JSON, its texts: a command's output, not its exit code), where
    that shows any; what it counts stands ("2 files" after a listing of two entries)."""
    try:
        value = json.loads(shown)
    except (ValueError, RecursionError):
        value = shown
    texts = [value] if isinstance(value, str) else _texts(value)
    words = {word for text in texts for word in _words(text)}
    if not words:
        return False
    counted = _counted(value, texts)
    return not (_words(said) & (words | counted))


def _counted(value: object, texts: list[str]) -> set[str]:
    """What a decoded JSON value counts: the items of each of its lists, and the lines and
    words of each of its ``texts``."""
    return {str(len(found)) for text in texts
            for found in (text.splitlines(), text.split())} | _lengths(value)


def _texts(value: object) -> list[str]:
    """The texts of a decoded JSON value, its keys left out but the names of the files a
    command wrote (``WRITTEN``)."""
    if isinstance(value, dict):
        written = value.get(WRITTEN)
        return [*(written if isinstance(written, dict) else ()),
                *(text for item in value.values() for text in _texts(item))]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return [value] if isinstance(value, str) else []


def _lengths(value: object) -> set[str]:
    """How many items each list of a decoded JSON value holds."""
    if isinstance(value, dict):
        return {length for item in value.values() for length in _lengths(item)}
    if isinstance(value, list):
        return {str(len(value))}.union(*(_lengths(item) for item in value))
    return set()


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower())
            if len(word) >= WORD_LETTERS or any(char.isdigit() or char == "." for char in word)}

"""Numbers and file names a Worker's result copies from the examples of its instructions that
nothing its run was given or shown holds: neither its task, nor a call's arguments, nor a call's
result, nor a count of what a result lists. A small model fills a report in from its examples:
after listing a folder that held ``countdown.py`` and ``fox.txt``, the 1.5B model ended
``done`` with "fox.txt holds fox: 12 bytes." (the file had 19; "12 bytes" is an example's), and
another time with "The work directory contains count.py and fox.txt." (``count.py`` is an
example's file), and the person was told so. Told once instead, it ended failed with the
runtime's words as its error, though the listing was done. The sentences that give such a
number or name are left out of the result; what the run did is told beside it
(``lifecycle.actions``).

A number no example gives stands (a sum the model worked out, "22"), and so does one that
counts what a result showed ("2 files" after a listing of two entries)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from mimikit.tools.reply_checks import without_sentences
from mimikit.workspace.named import named_paths

# A number as written: digits, with the separators inside it ("1,024", "3.5"), read without
# the thousands' commas so that "10,800" and "10800" are one number; not the digits of a
# name or an id ("python3", "task-3f2a…": a run's ids would show numbers at random).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")
# What a result is where every sentence went: not the values left out, which a small model
# then tells as facts (told "Its result gave count.py, which nothing its run showed.", the
# 1.5B model reported that the folder held count.py).
LEFT_OUT = "Its result gave what nothing its run showed, and was left out."


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
    shown = {fact for text in seen for fact in shown_by(text)}
    copied = set(facts(examples)) - shown
    if copied.isdisjoint(facts(said)):
        return said
    kept = without_sentences(said, lambda sentence: not copied.isdisjoint(facts(sentence)))
    return kept or LEFT_OUT


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
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            found.add(str(len(item)))
            stack.extend(item)
        elif isinstance(item, str):
            found.update((*facts(item), str(len(item.splitlines())), str(len(item.split()))))
    return found

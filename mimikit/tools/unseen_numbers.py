"""Numbers a Worker's result gives that nothing its run was given or shown holds: neither its
task, nor a call's arguments, nor a call's result. A small model fills a report in from its
examples: after listing a folder that held ``countdown.py`` and ``fox.txt``, the 1.5B model
ended ``done`` with "fox.txt holds fox: 12 bytes." (the file had 19; "12 bytes" is an
example's), and the person was told so. Told once instead, it ended failed with the runtime's
words as its error, though the listing was done. The sentences that give such a number are
left out of the result; what the run did is told beside it (``lifecycle.actions``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A number as written: digits, with the separators inside it ("1,024", "3.5"), read without
# the thousands' commas so that "10,800" and "10800" are one number.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A sentence and the blanks after it (a mark inside a number or a name ends none).
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？]|$)\s*", re.DOTALL)
LEFT_OUT = "Its result gave {numbers}, which nothing its run showed."


def numbers(text: str) -> list[str]:
    """The numbers ``text`` writes, each once, in order (thousands' commas left out)."""
    return list(dict.fromkeys(found.replace(",", "") for found in _NUMBER.findall(text)))


def held_to_seen(said: str, seen: Iterable[str]) -> str:
    """``said`` without its sentences that give a number none of ``seen`` (the run's task,
    calls and their results) writes; where none is left, a sentence that says what was left
    out. ``said`` itself when it gives no such number."""
    shown = {number for text in seen for number in numbers(text)}
    missing = [number for number in numbers(said) if number not in shown]
    if not missing:
        return said
    kept = "".join(sentence for sentence in _SENTENCE.findall(said)
                   if shown.issuperset(numbers(sentence))).strip()
    return kept or LEFT_OUT.format(numbers=", ".join(missing))

"""Numbers a Worker's result gives that nothing its run was given or shown holds: neither its
task, nor a call's arguments, nor a call's result. A small model fills a report in from its
examples: after listing a folder that held ``countdown.py`` and ``fox.txt``, the 1.5B model
ended ``done`` with "fox.txt holds fox: 12 bytes." (the file had 19; "12 bytes" is an
example's), and the person was told so. Told once, it may say again what it holds to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A number as written: digits, with the separators inside it ("1,024", "3.5"), read without
# the thousands' commas so that "10,800" and "10800" are one number.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
TOLD = "Your result gives"  # how the runtime's word on it begins (said once per run)


def numbers(text: str) -> list[str]:
    """The numbers ``text`` writes, each once, in order (thousands' commas left out)."""
    return list(dict.fromkeys(found.replace(",", "") for found in _NUMBER.findall(text)))


def unseen(said: str, seen: Iterable[str]) -> list[str]:
    """The numbers of ``said`` that none of ``seen`` writes."""
    shown = {number for text in seen for number in numbers(text)}
    return [number for number in numbers(said) if number not in shown]


def told_unseen(said: str, seen: Iterable[str]) -> str | None:
    """What to tell a Worker whose result ``said`` gives numbers none of ``seen`` (its task,
    its calls and their results) holds; None when it gives none."""
    missing = unseen(said, seen)
    if not missing:
        return None
    return (f"{TOLD} {', '.join(missing)}, which neither the task nor any result of this run "
            "shows. Give only what the results showed (run a command that shows it if you "
            "need it), then call submit_result again.")

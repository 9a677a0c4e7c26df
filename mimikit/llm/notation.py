"""Calls written as a tool's name followed by its arguments, the way a prompt or a program
would show them rather than as JSON:

| written                                              | who writes it                          |
|------------------------------------------------------|----------------------------------------|
| ``delegate{prompt: "Read a.txt", title: "Read"}``    | Qwen2.5 1.5B copying a prompt example  |
| ``delegate {"prompt": "Read a.txt"}``                | small models, a name before the JSON   |
| ``delegate({"prompt": "Read a.txt"})``               | models writing JavaScript              |
| ``delegate(prompt="Read a.txt", title='Read')``      | Llama 3.x's code-style calls, Python   |

Inside, the object may be loose the way JavaScript and Python write them (``literals``). Only
the names of the role's tools count, and only where the name stands as a word of its own.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from mimikit.llm.blobs import OPENAI_NAMESPACE
from mimikit.llm.literals import Reader


@functools.lru_cache(maxsize=64)
def named_start(names: frozenset[str], at_end: bool = False) -> re.Pattern[str]:
    """Where a call in this notation may begin: one of ``names`` as a word of its own (OpenAI's
    ``functions.`` before it allowed), then ``{`` or ``(``, spaces between them allowed; with
    ``at_end``, also a name that ends the text (a streamed text may go on with the bracket)."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    after = r"(?:(?=[{(])|\Z)" if at_end else r"(?=[{(])"
    return re.compile(rf"(?<![\w$.])(?:{re.escape(OPENAI_NAMESPACE)})?({alternatives or '(?!)'})"
                      r"([ \t]*+)" + after)


def arguments_at(text: str, index: int) -> tuple[dict[str, Any], int]:
    """The arguments of a named call whose ``{`` or ``(`` is at ``index``, and where they end.

    Raises:
        NotLoose: where the text stops being such arguments (at its end while it is unfinished).
    """
    reader = Reader(text)
    if text.startswith("(", index):
        pos = reader.space(index + 1)
        if text.startswith("{", pos):
            value, pos = reader.object(pos, 1)
            return value, reader.expect(reader.space(pos), ")")
        return reader.keywords(pos)
    return reader.object(index, 1)


def mentioned(text: str, start: re.Match[str]) -> bool:
    """Whether a ``named_start`` match whose arguments cannot be read is a name in prose
    ("reply (soon)", "delegate {the rest}"): a space or a parenthesis before what follows,
    where a call written without them (``delegate{``) that cannot be read is a broken call."""
    return bool(start.group(2)) or text.startswith("(", start.end())


@functools.lru_cache(maxsize=64)
def name_prefixes(names: frozenset[str]) -> frozenset[str]:
    """Every beginning of every name (``functions.`` before it too): a word ending a streamed
    text that is one of these may still become a call."""
    out: set[str] = set()
    for name in names:
        for written in (name, OPENAI_NAMESPACE + name):
            out.update(written[:size] for size in range(1, len(written) + 1))
    return frozenset(out)


def trailing_prefix(text: str, prefixes: frozenset[str]) -> int:
    """Where the word ending ``text`` starts when it is one of ``prefixes``; -1 otherwise."""
    longest = max(map(len, prefixes), default=0)
    start = len(text)
    while start > 0 and len(text) - start <= longest and \
            (text[start - 1].isalnum() or text[start - 1] in "_.$"):
        start -= 1
    word = text[start:]
    if not word or len(word) > longest:
        return -1
    return start if word in prefixes else -1

"""Calls written as Python (Llama 3.2 and 4's "pythonic" format, and small models generally):
``reply(text="hi")``, ``[delegate(prompt="..."), reply(text="On it.")]``. Arguments are given
by name; literals are read as Python's (``True``, ``None``, single quotes)."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Collection
from functools import cache
from typing import Any

from mimikit.llm.formats.base import OPENINGS_TRIED, Span

CALL_CHARS = 20_000  # the longest call looked for: a call's closing parenthesis within this


@cache
def _pattern(names: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alternatives})\(")


class Pythonic:
    name = "pythonic"

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        if "(" not in text or not names:
            return []
        spans = []
        for found in itertools.islice(_pattern(frozenset(names)).finditer(text), OPENINGS_TRIED):
            end = _closing(text, found.end())
            if end is None:
                continue
            arguments = _arguments(text[found.start():end])
            name = found[0][:-1]
            start, end = _in_list(text, found.start(), end)
            if arguments is None:
                spans.append(Span(start, end, broken=text[start:end].strip()[:300]))
            else:
                spans.append(Span(start, end, calls=[(name, arguments)]))
        return spans

    def opening(self, text: str, names: Collection[str]) -> int | None:
        found = _pattern(frozenset(names)).search(text) if "(" in text else None
        if found is not None:
            return found.start()
        last = re.search(r"(?<![\w.])\w+\Z", text)  # a name may be arriving
        return last.start() if last and any(n.startswith(last[0]) for n in names) else None


def _in_list(text: str, start: int, end: int) -> tuple[int, int]:
    """A call's span, widened over the list it is written in (``[a(x=1), b(y=2)]``): the
    opening bracket before it, the comma or closing bracket after it."""
    before = len(text[:start].rstrip())
    if before and text[before - 1] in "[,":
        start = before - 1 if text[before - 1] == "[" else start
    after = len(text) - len(text[end:].lstrip())
    if after < len(text) and text[after] in ",]":
        end = after + 1
    return start, end


def _closing(text: str, pos: int) -> int | None:
    """Where the call whose arguments begin at ``pos`` ends (after its parenthesis)."""
    depth, quote, escaped = 1, "", False
    for index in range(pos, min(len(text), pos + CALL_CHARS)):
        char = text[index]
        if quote:
            escaped = char == "\\" and not escaped
            quote = "" if char == quote and not escaped else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _arguments(source: str) -> dict[str, Any] | None:
    """The keyword arguments of one call written as Python; None when it does not read (or
    gives arguments by place)."""
    try:
        call = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if not isinstance(call, ast.Call) or len(call.args) > (0 if call.keywords else 1):
        return None
    try:
        if call.args:  # reply({"text": "hi"}): the arguments as one object
            value = ast.literal_eval(call.args[0])
            return value if isinstance(value, dict) else None
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


FORMAT = Pythonic()

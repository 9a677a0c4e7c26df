"""Calls written as bare or fenced JSON: ``{"name": "reply", "arguments": {...}}``, a list of
them, OpenAI's wire shape, and the key variants models use (``tool``/``args``, ``parameters``,
``functions.reply``); doubled braces ``{{...}}`` too. JSON that names no tool of the role is
ordinary text, and a call inside ordinary JSON is part of that JSON."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from mimikit.llm.formats.base import (
    OPENINGS_TRIED,
    REPAIRED_CHARS,
    Span,
    calls_in,
    decode,
    decode_prefix,
)

FENCE = "```"
_FENCED = re.compile(r"```[\w+.\-]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPENS = re.compile(r"[{\[]|```")


class JsonCalls:
    name = "json"

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        spans: list[Span] = []
        found, tries = _OPENS.search(text), OPENINGS_TRIED
        while found is not None and tries:
            tries -= 1
            start = found.start()
            value, end = self._value_at(text, start)
            span = _span(start, end, value, names)
            if span is not None:
                spans.append(span)
            found = _OPENS.search(text, max(end, start + 1) if value is not None else start + 1)
        return spans

    @staticmethod
    def _value_at(text: str, start: int) -> tuple[Any, int]:
        """The value at ``start`` and where it ends (``start`` when none reads there)."""
        if text.startswith(FENCE, start):
            fenced = _FENCED.match(text, start)
            if fenced is None:  # a fence left open at the end of the answer
                return decode(text[start:].lstrip("`").partition("\n")[2]), len(text)
            return decode(fenced[1]), fenced.end()
        doubled = text.startswith("{{", start)
        read = decode_prefix(text, start + 1 if doubled else start)
        if read is not None:
            end = read[1] + (1 if doubled and text.startswith("}", read[1]) else 0)
            return read[0], end
        if len(text) - start <= REPAIRED_CHARS and text.find("\n\n", start) < 0:
            # the last thing written, its last braces left out or its syntax loose: taken
            # whole only when it holds calls (else a call may begin further on)
            value = decode(text[start:].replace("{{", "{").replace("}}", "}"))
            return (value, len(text)) if calls_in(value) else (None, start)
        return None, start


def _span(start: int, end: int, value: Any, names: Collection[str]) -> Span | None:
    calls = calls_in(value) if value is not None else None
    if not calls or not any(name in names for name, _arguments in calls):
        return None
    return Span(start, end, calls=[c for c in calls if c[0] in names],
                unknown=[c[0] for c in calls if c[0] not in names])


FORMAT = JsonCalls()

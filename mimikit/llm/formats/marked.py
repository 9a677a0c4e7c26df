"""Calls after a marker the model's chat template defines (``<tool_call>``, ``<|python_tag|>``,
``[TOOL_CALLS]``): the body runs to the closing marker, the next opening one, or the end."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from mimikit.llm.formats.base import (
    OPENINGS_TRIED,
    Call,
    Span,
    calls_in,
    decode,
    decode_prefix,
    tagged_span,
)


def json_body(body: str) -> list[Call] | None:
    """The calls of a body that is one JSON value (a call or a list of calls)."""
    return calls_in(decode(body))


def json_end(text: str, body_at: int) -> int | None:
    """Where a body that was not closed ends: after the JSON values that begin there, split by
    ``;`` (None when none begins there)."""
    end, read = None, decode_prefix(text, body_at)
    while read is not None:
        end = read[1]
        rest = text[end:].lstrip()
        read = decode_prefix(text, len(text) - len(rest) + 1) if rest.startswith(";") else None
    return end


@dataclass(frozen=True)
class Marked:
    """A format whose calls follow ``opens``, each body read by ``read``."""

    name: str
    opens: str
    closes: tuple[str, ...] = ()
    read: Callable[[str], list[Call] | None] = json_body
    ends: Callable[[str, int], int | None] = json_end

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        spans, start, tries = [], text.find(self.opens), OPENINGS_TRIED
        while start >= 0 and tries:
            tries -= 1
            body_at = start + len(self.opens)
            following = text.find(self.opens, body_at)
            stop = following if following >= 0 else len(text)
            end, body_end, closed = stop, stop, False
            for close in self.closes:
                found = text.find(close, body_at, stop)
                if found >= 0 and found < body_end:
                    body_end, end, closed = found, found + len(close), True
            if not closed:  # the body ends where its JSON does, if it does
                ended = self.ends(text, body_at)
                if ended is not None and ended <= stop:
                    body_end = end = ended
            body = text[body_at:body_end]
            calls = self.read(body)
            if calls or "{" in body or "[" in body:  # a marker named in prose holds no call
                spans.append(tagged_span(start, end, calls, names, text))
            start = following
        return spans

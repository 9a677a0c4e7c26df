"""One reading of the text of an answer: the tool calls written into it in any format of the
table (``llm.formats``) and the prose around them; and, for a text still arriving, how much of
it a person may already be shown (``ShownText``), decided by the same formats.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.formats import FORMATS
from mimikit.llm.formats.base import Span

# A marker is at most this long: an opening further back than this from the end of the text
# is whole, and no later character can show it to be prose.
LONGEST_MARKER = 16


@dataclass
class Written:
    """What a text holds: calls (name, arguments as JSON text), the prose around them, and
    what tried to be a call (unknown tools, calls that could not be read)."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    prose: str = ""
    unknown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)

    @property
    def markup_only(self) -> bool:
        """Neither calls nor prose nor anything that tried to be a call."""
        return not (self.calls or self.prose or self.unknown or self.broken)


def read_text(text: str, names: Collection[str]) -> Written:
    """The calls written in ``text`` and the prose around them (``names``: the role's tools)."""
    spans = sorted((span for fmt in FORMATS for span in fmt.find(text, names)),
                   key=lambda span: (span.start, -span.end))
    taken: list[Span] = []
    for span in spans:
        if not taken or span.start >= taken[-1].end:
            taken.append(span)
    written = Written(prose=_prose(text, taken))
    for span in taken:
        written.calls += [(name, arguments_text(value)) for name, value in span.calls]
        written.unknown += span.unknown
        if span.broken:
            written.broken.append(span.broken)
    written.calls = _once(written.calls)
    return written


def _prose(text: str, spans: list[Span]) -> str:
    pieces, pos = [], 0
    for span in [*spans, Span(len(text), len(text))]:
        pieces.append(text[pos:span.start])
        pos = max(pos, span.end)
    kept = [piece for piece in pieces if piece.strip()]
    joint = "\n\n" if any("\n" in piece for piece in kept) else " "
    return joint.join(piece.strip() for piece in kept)


def _once(calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each call once: a small model in a loop writes the same call over and over."""
    return list(dict.fromkeys(calls))


def arguments_text(raw: Any) -> str:
    """A call's arguments as JSON text: an object as JSON, text as sent (arguments encoded
    twice are unwrapped), nothing as ``{}``."""
    if raw is None:
        return "{}"
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith('"'):
            try:
                inner = json.loads(text)
            except json.JSONDecodeError:
                return text
            if isinstance(inner, str) and inner.strip().startswith("{"):
                return inner.strip()
        return raw if text else "{}"
    return json.dumps(raw, ensure_ascii=False)


class ShownText:
    """What of a text arriving piece by piece a person may be shown: everything before the
    first place where a call may begin; the rest once the whole answer is read."""

    def __init__(self, names: Collection[str]) -> None:
        self.names = names
        self.text = ""
        self.sent = ""  # what was shown so far: the text before any opening, stripped
        self.shown = 0  # characters of ``text`` looked at for openings already
        self.held_from: int | None = None  # a whole opening: nothing after it shows early

    def feed(self, piece: str) -> str:
        """Add ``piece``; the text that may be shown now ('' when none)."""
        self.text += piece
        if self.held_from is not None:
            return ""
        hold = self._opening()
        if hold is not None and hold < len(self.text) - LONGEST_MARKER:
            self.held_from = hold
        safe = (self.text[:hold] if hold is not None else self.text).strip()
        self.shown = hold if hold is not None else len(self.text)
        new, self.sent = safe[len(self.sent):], max(self.sent, safe, key=len)
        return new

    def finish(self, written: Written) -> str:
        """The rest of the prose of the whole answer, once it is read (``written``)."""
        prose = written.prose
        return prose[len(self.sent):] if prose.startswith(self.sent) else ""

    def _opening(self) -> int | None:
        rest = self.text[self.shown:]
        found = [at for fmt in FORMATS if (at := fmt.opening(rest, self.names)) is not None]
        return self.shown + min(found) if found else None

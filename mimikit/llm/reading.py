"""One reading of the text of an answer: the tool calls written into it in any format of the
table (``llm.formats``) and the prose around them. A text is read once, whole: a stream shows a
person the prose of this reading, never a part of the text before it is read.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.formats import FORMATS
from mimikit.llm.formats.base import Span


@dataclass
class Written:
    """What a text holds: calls (name, arguments as JSON text), the prose around them, and
    what tried to be a call (unknown tools, calls that could not be read)."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    prose: str = ""
    unknown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


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
    written.calls = list(dict.fromkeys(written.calls))  # a model in a loop repeats a call
    return written


def _prose(text: str, spans: list[Span]) -> str:
    pieces, pos = [], 0
    for span in [*spans, Span(len(text), len(text))]:
        pieces.append(text[pos:span.start])
        pos = max(pos, span.end)
    kept = [piece for piece in pieces if piece.strip()]
    joint = "\n\n" if any("\n" in piece for piece in kept) else " "
    return joint.join(piece.strip() for piece in kept)


def arguments_text(raw: Any) -> str:
    """A call's arguments as JSON text: an object as JSON, text as sent (arguments encoded
    twice are unwrapped), nothing as ``{}``."""
    if isinstance(raw, str) and raw.strip():
        text = raw.strip()
        try:
            inner = json.loads(text) if text.startswith('"') else None
        except json.JSONDecodeError:
            return text
        return inner.strip() if isinstance(inner, str) and inner.strip().startswith("{") else raw
    return "{}" if raw is None or isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)

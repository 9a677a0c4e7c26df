"""What every text format of a tool call shares: the span of text a call takes (``Span``), the
interface of a format (``CallFormat``), and the reading of the JSON a call is written in.

A format finds its calls in a whole text (``find``). A text is read once, whole, and the
stream shows a person only the prose of that reading, so the stream and the result never
disagree.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

import json_repair

Call = tuple[str, Any]  # a tool's name and its arguments (an object, or text to be refused)

# The keys a written call gives its name under, and its arguments under.
NAME_KEYS = ("name", "tool", "tool_name", "function", "recipient_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
NAMESPACE = "functions."
_DECODER = json.JSONDecoder()
# Openings of a format looked at in one text, so that a long text is read in bounded time
# (an answer holds a few calls; a megabyte of markers is read in well under a second).
OPENINGS_TRIED = 64
REPAIRED_CHARS = 20_000  # the longest text a cut-short or loose value is repaired in


@dataclass
class Span:
    """A part of a text that is one or more calls (or tried to be: ``unknown``, ``broken``)."""

    start: int
    end: int
    calls: list[Call] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # names of tools that do not exist
    broken: str = ""  # the text of a call that could not be read


class CallFormat(Protocol):
    """One way of writing tool calls into text."""

    @property
    def name(self) -> str:
        """The format's name, for logs and tests."""

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        """The calls written in ``text`` in this format, in order; ``names``: the tools."""


def tool_name(raw: Any) -> str:
    """A written tool name without the ``functions.`` namespace some models put before it."""
    return str(raw).strip().removeprefix(NAMESPACE)


def calls_in(value: Any) -> list[Call] | None:
    """The calls a decoded JSON value holds (one call, a list of calls, a ``tool_calls`` or
    OpenAI wire object), or None when it is not made of calls."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(
            wrapped := value.get("tool_calls", value.get("tool_call")), list | dict):
        value = wrapped
    items = value if isinstance(value, list) else [value]
    calls = [_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _call(item: Any) -> Call | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    if isinstance(function, dict):  # OpenAI's wire shape: {"type": "function", "function": {}}
        item = function
    key = next((k for k in NAME_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
    if key is None:
        return None
    given = next((k for k in ARGUMENT_KEYS if k in item), None)
    if given is not None:
        arguments = item[given]
    else:  # the other keys are the arguments: {"name": "reply", "text": "hi"}
        arguments = {k: v for k, v in item.items() if k not in (key, "type", "id")}
    return tool_name(item[key]), {} if arguments is None else arguments


def decode(body: str) -> Any:
    """The JSON value ``body`` holds, read strictly; else repaired (keys without quotes, single
    quotes, a trailing comma, closing brackets left out) when it does not end inside a string: a
    value cut short inside a string is never taken for a whole one. None when nothing reads."""
    body = body.strip()
    try:
        return json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        pass
    if not body or len(body) > REPAIRED_CHARS or _ends_in_string(body):
        return None
    try:
        value = json_repair.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) and value else None


def _ends_in_string(body: str) -> bool:
    """Whether ``body`` ends inside a quoted string (a value cut short there)."""
    quote, escaped = "", False
    for char in body:
        if quote:
            escaped = char == "\\" and not escaped
            quote = "" if char == quote and not escaped else quote
        elif char in "\"'":
            quote = char
    return bool(quote)


def decode_prefix(text: str, pos: int) -> tuple[Any, int] | None:
    """The JSON value that begins at ``text[pos]`` (after blanks) and where it ends, read
    strictly; None when none begins there."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    try:
        return _DECODER.raw_decode(text, pos)
    except (json.JSONDecodeError, RecursionError):
        return None


def tagged_span(start: int, end: int, calls: list[Call] | None, names: Collection[str],
                text: str) -> Span:
    """The span of a marked call: its calls of known tools, the unknown names, or the text
    that could not be read."""
    if not calls:
        return Span(start, end, broken=text[start:end].strip()[:300])
    known = [call for call in calls if call[0] in names]
    unknown = [call[0] for call in calls if call[0] not in names]
    return Span(start, end, calls=known, unknown=unknown)

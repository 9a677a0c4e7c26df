"""Reading a streamed chat completion, passing the reply text on as it arrives.

The reply text is the assistant's content, or the ``text`` argument of a ``reply`` tool call,
whose JSON arrives in fragments: it is decoded as far as it is complete at each fragment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from mimikit.models import Usage

REPLY_TOOL = "reply"
_TEXT_VALUE = re.compile(r'"text"\s*:\s*"')
_PARTIAL_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{0,3})?$')


class ReplyText:
    """The ``text`` value of a JSON object arriving in fragments, decoded as far as it goes."""

    def __init__(self) -> None:
        self.raw = ""
        self.sent = ""

    def feed(self, fragment: str) -> str:
        """Add ``fragment``; returns the text decoded since the last call ('' when none)."""
        self.raw += fragment
        start = _TEXT_VALUE.search(self.raw)
        if start is None:
            return ""
        decoded = _decode_prefix(self.raw[start.end():])
        new, self.sent = decoded[len(self.sent):], decoded
        return new


def _decode_prefix(body: str) -> str:
    """The JSON string starting at ``body`` (after its opening quote), as far as it is whole."""
    end, escaped = len(body), False
    for index, char in enumerate(body):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            end = index
            break
    whole = _PARTIAL_ESCAPE.sub("", body[:end])
    if whole.endswith("\\") and not whole.endswith("\\\\"):
        whole = whole[:-1]
    try:
        text: str = json.loads(f'"{whole}"')
    except json.JSONDecodeError:  # a surrogate pair cut in half: wait for the rest
        return ""
    return text


Call = tuple[str, str, str]  # id, name, arguments


def read_stream(chunks: Iterable[Any], on_text: Callable[[str], None]
                ) -> tuple[str | None, list[Call], Usage] | None:
    """The content, tool calls and usage a stream of chunks makes up; None when no chunk came
    (the server answered without streaming)."""
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    replies: dict[int, ReplyText] = {}
    usage, seen = Usage(), False
    for chunk in chunks:
        seen = True
        if getattr(chunk, "usage", None) is not None:
            usage = _usage(chunk.usage)
        for choice in chunk.choices or []:
            _take_delta(choice.delta, content, calls, replies, on_text)
    if not seen:
        return None
    found = [(c["id"], c["name"], c["arguments"]) for _index, c in sorted(calls.items())]
    return "".join(content) or None, found, usage


def _take_delta(delta: Any, content: list[str], calls: dict[int, dict[str, str]],
                replies: dict[int, ReplyText], on_text: Callable[[str], None]) -> None:
    if delta is None:
        return
    if delta.content:
        content.append(delta.content)
        on_text(delta.content)
    for part in delta.tool_calls or []:
        call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
        call["id"] = part.id or call["id"]
        function = part.function
        if function is None:
            continue
        call["name"] += function.name or ""
        call["arguments"] += function.arguments or ""
        if call["name"] == REPLY_TOOL and function.arguments:
            text = replies.setdefault(part.index, ReplyText()).feed(function.arguments)
            if text:
                on_text(text)


def _usage(raw: Any) -> Usage:
    return Usage(promptTokens=raw.prompt_tokens or 0, completionTokens=raw.completion_tokens or 0,
                 totalTokens=raw.total_tokens or 0)

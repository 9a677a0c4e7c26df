"""Mistral: ``[TOOL_CALLS] [{"name": "reply", "arguments": {...}}]``, or in its newer
templates ``[TOOL_CALLS]reply[ARGS]{...}``."""

from __future__ import annotations

from mimikit.llm.formats.base import Call, calls_in, decode, tool_name
from mimikit.llm.formats.marked import Marked, json_end

ARGS = "[ARGS]"


def _end(text: str, body_at: int) -> int | None:
    """Where a body that was not closed ends: after its JSON, named form or list."""
    named = text.find(ARGS, body_at)
    return json_end(text, named + len(ARGS) if named >= 0 else body_at)


def _calls(body: str) -> list[Call] | None:
    name, marker, arguments = body.partition(ARGS)
    if marker and name.strip():
        value = decode(arguments)
        return [(tool_name(name), value)] if isinstance(value, dict) else None
    return calls_in(decode(body))


FORMAT = Marked("mistral", "[TOOL_CALLS]", ("</s>",), _calls, _end)

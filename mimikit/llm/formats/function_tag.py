"""Llama 3.1's other template: ``<function=reply>{"text": "hi"}</function>``."""

from __future__ import annotations

from mimikit.llm.formats.base import Call, decode, tool_name
from mimikit.llm.formats.marked import Marked, json_end


def _calls(body: str) -> list[Call] | None:
    name, _closed, arguments = body.partition(">")
    value = decode(arguments) if arguments.strip() else {}
    return [(tool_name(name), value)] if isinstance(value, dict) and name.strip() else None


def _end(text: str, body_at: int) -> int | None:
    """Where a body that was not closed ends: after the JSON that follows the name."""
    return json_end(text, text.find(">", body_at) + 1)


FORMAT = Marked("function_tag", "<function=", ("</function>",), _calls, _end)

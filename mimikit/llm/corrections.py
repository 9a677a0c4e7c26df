"""What to tell a model that answered in text where a tool call was due.

A plain answer ends a run only where the role may answer in text (the Teller's reply). A tool
call written into the message text (as some models do when their server does not parse tool
calls) is never taken for an answer: the model is told to use function calling.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mimikit.llm.registry import Registry

_FENCES = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_TOOL_CALL_TAGS = re.compile(r"</?tool_call>|<\|python_tag\|>")
_NAME_KEYS = ("name", "tool", "function", "tool_name")


def plain_answer_correction(content: str | None, registry: Registry, role: str,
                            text_ends_run: bool) -> str | None:
    """The corrective message for an answer without tool calls, or None when it is final."""
    names = registry.names_for(role)
    written = embedded_tool_call(content or "", names)
    if written is not None:
        return (f"error: your message holds a call of {written!r} written as text. Call tools "
                "through the function-calling interface (tool_calls), not in the message.")
    if text_ends_run:
        return None
    finishers = registry.finishers(role) or names
    return (f"error: you answered in plain text without calling a tool, and only "
            f"{' or '.join(repr(n) for n in finishers)} ends this run. Call it now with your "
            "result, or call the tools you still need.")


def embedded_tool_call(content: str, names: list[str]) -> str | None:
    """The tool name when ``content`` is a JSON tool call of one of ``names`` (else None)."""
    text = _TOOL_CALL_TAGS.sub("", _FENCES.sub("", content.strip())).strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    for item in value if isinstance(value, list) else [value]:
        name = _named(item)
        if name in names:
            return name
    return None


def _named(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in _NAME_KEYS:
        value = item.get(key)
        if isinstance(value, dict):
            value = value.get("name")
        if isinstance(value, str):
            return value
    return None

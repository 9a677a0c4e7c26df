"""What a model's answer holds, however it sent it: the tool calls (from ``tool_calls``, or
written into its text in any shape ``quirks`` reads), the text a person may read, and what went
wrong (an unknown or unreadable call, an answer cut at ``max_tokens``, nothing at all).

A call written as text becomes a real call in the transcript, so the model sees in its next
turn how a call looks, and its text never reaches the person.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.blobs import decode_at, only_markup
from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.quirks import WrittenCalls, arguments_text, looks_truncated, written_calls

FORCED_OBJECTS_TRIED = 32  # braces looked at for a forced function's arguments


@dataclass
class Answer:
    """One answer, read."""

    calls: list[ToolCall]
    text: str | None
    message: dict[str, Any]
    written: bool = False
    unknown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    cut: bool = False

    @property
    def empty(self) -> bool:
        """Neither a call nor any text (nor anything that tried to be a call)."""
        return not (self.calls or self.text or self.unknown or self.broken)


def read_answer(completion: Completion, names: Collection[str], step: int = 0,
                forced: tuple[str, frozenset[str]] | None = None) -> Answer:
    """The calls and text of ``completion``; ``names`` are the tools the model was offered,
    ``step`` numbers the ids given to calls written as text, ``forced`` the function the
    request forced (or the role's one finisher) and its parameters: an answer holding only an
    object of those parameters (``{"text": "hi"}`` when ``reply`` was forced, ``{"status":
    "done", ...}`` from a Planner) is that function's call.

    An answer that reached ``max_tokens`` counts as cut only when it holds no whole call: a
    small model often writes its call and then blank lines to the limit.
    """
    cut = completion.finish_reason == "length"
    if completion.tool_calls:
        calls = [ToolCall(id=call.id or f"call-{step}-{index}", name=call.name,
                          arguments=arguments_text(call.arguments))
                 for index, call in enumerate(completion.tool_calls)]
        text = (completion.content or "").strip() or None
        return Answer(calls, text, _message(text, calls), cut=cut and not all(
            _whole(call.arguments) for call in calls))
    content = completion.content or ""
    found = written_calls(content, names) if content.strip() else None
    if not cut and (found is None or not found.calls) and looks_truncated(content):
        found = _closed(content, names) or found
    if (found is None or not found.calls) and forced is not None:
        found = _forced_arguments(content, *forced) or found
    if found is None:
        text = None if only_markup(content) else content.strip() or None
        return Answer([], text, {"role": "assistant", "content": completion.content or ""},
                      cut=cut or (text is not None and looks_truncated(text)))
    calls = _once([ToolCall(id=f"text-{step}-{index}", name=name, arguments=arguments)
                   for index, (name, arguments) in enumerate(found.calls)])
    prose = found.prose or None
    return Answer(calls, prose, _message(prose, calls), written=bool(calls),
                  unknown=list(found.unknown), broken=list(found.broken),
                  cut=not calls and (cut or looks_truncated(content)))


def _closed(content: str, names: Collection[str]) -> WrittenCalls | None:
    """The calls of an answer that ended (not at ``max_tokens``) before the last brace or two
    of its call: small models drop them."""
    body = content.rstrip()
    fence = "\n```" if body.endswith("```") else ""  # the fence closes, the call does not
    body = body.removesuffix("```").rstrip() if fence else body
    for missing in ("}", "}}", "}}}"):
        closed = body + missing + fence
        found = written_calls(closed, names)
        if found is not None and found.calls and not looks_truncated(closed):
            return found
    return None


def _forced_arguments(content: str, name: str, parameters: frozenset[str]) -> WrittenCalls | None:
    """The first JSON object in ``content`` made only of ``parameters``, as a call of ``name``."""
    pos, tries = content.find("{"), FORCED_OBJECTS_TRIED
    while 0 <= pos and parameters and tries:
        tries -= 1
        found, _read = decode_at(content, pos)
        if found is not None and isinstance(found.value, dict) and found.value and \
                set(found.value) <= parameters:
            return WrittenCalls(calls=[(name, arguments_text(found.value))],
                                prose=(content[:pos] + content[found.end:]).strip())
        pos = content.find("{", pos + 1)
    return None


def _once(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls written in a text, each the same call (name and arguments) only once: a small
    model in a loop writes one call over and over. (Calls sent as ``tool_calls`` all run: a
    second identical ``delegate`` there is answered with the first one's id.)"""
    seen: set[tuple[str, str]] = set()
    kept = []
    for call in calls:
        if (call.name, call.arguments) not in seen:
            seen.add((call.name, call.arguments))
            kept.append(call)
    return kept


def _message(text: str | None, calls: list[ToolCall]) -> dict[str, Any]:
    # "" rather than null: some servers (llama-cpp-python) refuse a message without content
    message: dict[str, Any] = {"role": "assistant", "content": text or ""}
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in calls]
    return message


def _whole(arguments: str) -> bool:
    """True when ``arguments`` is whole JSON (not cut off at ``max_tokens``)."""
    try:
        json.loads(arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return False
    return True

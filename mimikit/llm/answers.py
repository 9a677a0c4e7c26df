"""What a model's answer holds, read once however it came: the calls of an answer held to the
role's schema (``turns``), the ``tool_calls`` the server returned, or the calls written into
its text (``reading``, one table of formats); the text a person may read; and what went wrong
(an unknown or unreadable call, an answer cut at ``max_tokens``, nothing at all).

A call written as text becomes a real call in the transcript, so the model sees in its next
turn how a call looks, and its text never reaches the person.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.reading import arguments_text, read_text
from mimikit.llm.turns import TurnShape


@dataclass
class Answer:
    """One answer, read."""

    calls: list[ToolCall]
    text: str | None
    message: dict[str, Any]
    structured: bool = False  # an object of the role's schema
    unknown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    cut: bool = False

    @property
    def empty(self) -> bool:
        """Neither a call nor any text (nor anything that tried to be a call)."""
        return not (self.calls or self.text or self.unknown or self.broken)


def read_answer(completion: Completion, names: Collection[str], step: str = "0",
                shape: TurnShape | None = None) -> Answer:
    """The calls and text of ``completion``: ``names`` are the tools the model was offered,
    ``step`` begins the ids given to calls that came without one (unique to the run's step),
    ``shape`` the schema the answer was held to (None: it was not)."""
    cut = completion.finish_reason == "length"
    content = completion.content or ""
    if completion.tool_calls:
        calls = [ToolCall(id=call.id or f"call-{step}-{index}", name=call.name,
                          arguments=arguments_text(call.arguments))
                 for index, call in enumerate(completion.tool_calls)]
        written = completion.written or read_text(content, names)
        text = written.prose or None
        return Answer(calls, text, _message(text, calls), cut=cut and not all(
            _whole(call.arguments) for call in calls))
    if shape is not None:
        structured = _structured(content, shape, step)
        if structured is not None or cut:  # an object cut short is no text to show
            return structured or Answer([], None, {"role": "assistant", "content": content},
                                        cut=True)
    written = completion.written or read_text(content, names)
    calls = [ToolCall(id=f"text-{step}-{index}", name=name, arguments=arguments)
             for index, (name, arguments) in enumerate(written.calls)]
    text = written.prose or None
    message = _message(text, calls) if calls else {"role": "assistant", "content": content}
    return Answer(calls, text, message, unknown=written.unknown, broken=written.broken,
                  cut=cut and not calls)


def _structured(content: str, shape: TurnShape, step: str) -> Answer | None:
    """The answer as an object of ``shape``; None when it is not one."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, RecursionError):
        return None
    found = shape.calls(value)
    if found is None:
        return None
    calls = [ToolCall(id=f"turn-{step}-{index}", name=name, arguments=arguments)
             for index, (name, arguments) in enumerate(found)]
    return Answer(calls, None, {"role": "assistant", "content": content}, structured=True)


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

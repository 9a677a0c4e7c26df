"""What one chat request answers (``Completion``, its ``ToolCall``s), what answers one
(``ChatClient``), and the field of it a person reads (``TextField``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from mimikit.llm.profile import ServerProfile
from mimikit.llm.reading import Written
from mimikit.models import Usage


class TextField(NamedTuple):
    """The field of an answer held to a schema that a person reads as it streams (the Teller's
    ``reply``), and words that end it where the model begins to write them (``ends``)."""

    name: str
    ends: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass
class Completion:
    """The model's answer to one chat request.

    ``finish_reason`` is the server's (``stop``, ``tool_calls``, ``length`` when the answer was
    cut at ``max_tokens``...); ``usage.estimated`` says the server sent no token counts.
    """

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    raw_message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    written: Written | None = None  # its text, read once while it streamed
    usage_streamed: bool | None = None  # a streamed answer's usage came in the stream
    waited: float = 0.0  # seconds it waited for a free slot of the server before it was sent

    @classmethod
    def of(cls, content: str | None, calls: list[ToolCall], usage: Usage,
           finish_reason: str | None = None) -> Completion:
        """A completion and the assistant message it adds to the transcript."""
        raw: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            raw["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}} for c in calls
            ]
        return cls(content=content, tool_calls=calls, usage=usage, raw_message=raw,
                   finish_reason=finish_reason)


class ChatClient(Protocol):
    """Anything that answers chat completions like ``LLMClient.chat``."""

    def chat(self, model: str, messages: list[dict[str, Any]],
             tools: list[dict[str, Any]] | None = None, deadline: float | None = None, *,
             max_tokens: int | None = None, tool_choice: Any = None,
             schema: dict[str, Any] | None = None, text_field: TextField | None = None,
             retries: int | None = None) -> Completion: ...

    def profile(self, model: str) -> ServerProfile: ...

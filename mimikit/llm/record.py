"""The record of one agent run: its transcript, tool calls, token usage and outcome, and the
steps it publishes as they happen."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from mimikit.models import Model, Usage, new_id, utcnow

RunStatus = Literal["running", "done", "failed", "stopped", "canceled"]
Observer = Callable[[dict[str, Any]], None]
STEP_TEXT_LIMIT = 2000  # characters of a model's text or a tool's output kept in a live step


class ToolCallRecord(Model):
    name: str
    arguments: str
    ok: bool
    content: str
    durationMs: int


class RunRecord(Model):
    """One LLM run: its transcript, tool calls, token usage and outcome; ``resumed`` counts
    the steps a run took from its journal instead of doing them again, ``path`` the way its
    requests were asked (``llm.profile``)."""

    id: str = Field(default_factory=lambda: new_id("run"))
    role: str
    model: str
    status: RunStatus = "running"
    error: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    toolCalls: list[ToolCallRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    startedAt: datetime = Field(default_factory=utcnow)
    durationMs: int = 0
    finalText: str | None = None
    stopValue: Any = None
    traceId: str | None = None
    resumed: int = 0
    path: str | None = None

"""The agent loop: ask the model, run the tool calls it makes, feed results back, repeat."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from mimikit.llm.client import ChatClient, LLMDeadline, ToolCall
from mimikit.llm.registry import Registry, ToolOutcome
from mimikit.models import Model, Usage, new_id, utcnow

logger = logging.getLogger("mimikit.llm")

RunStatus = Literal["done", "failed", "stopped"]


class ToolCallRecord(Model):
    name: str
    arguments: str
    ok: bool
    content: str
    durationMs: int


class RunRecord(Model):
    """One LLM run: its transcript, tool calls, token usage and outcome."""

    id: str = Field(default_factory=lambda: new_id("run"))
    role: str
    model: str
    status: RunStatus = "failed"
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


def run_agent(
    client: ChatClient,
    model: str,
    role: str,
    system_prompt: str,
    user_prompt: str,
    registry: Registry,
    ctx: Any,
    max_steps: int,
    deadline: float | None = None,
    on_step: Callable[[RunRecord], None] | None = None,
) -> RunRecord:
    """Run one agent until it answers without a tool call, a tool stops it, or a limit hits.

    Args:
        client: The LLM client.
        model: The model name.
        role: "teller", "planner", "worker" or "llm_eval"; selects the tools offered.
        system_prompt: The system message.
        user_prompt: The first user message.
        registry: The tools.
        ctx: Passed to every tool handler unchanged.
        max_steps: The most LLM requests this run may make.
        deadline: A ``time.monotonic()`` value after which the run fails as timed out.
        on_step: Called with the record before each LLM request; may raise to abort the run
            (the exception propagates).

    Returns:
        The run record: status "done" (plain answer, see ``finalText``), "stopped" (a tool
        ended the run, see ``stopValue``) or "failed" (step limit or deadline, see ``error``).

    Raises:
        LLMUnavailable: The LLM is not configured or cannot be reached.
    """
    started = time.monotonic()
    record = RunRecord(role=role, model=model)
    record.messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": user_prompt},
    ]
    try:
        _loop(client, record, registry, ctx, max_steps, deadline, started, on_step)
    finally:
        record.durationMs = int((time.monotonic() - started) * 1000)
    logger.info("%s run %s %s after %d steps", role, record.id, record.status, record.steps)
    return record


def _loop(
    client: ChatClient,
    record: RunRecord,
    registry: Registry,
    ctx: Any,
    max_steps: int,
    deadline: float | None,
    started: float,
    on_step: Callable[[RunRecord], None] | None,
) -> None:
    tools = registry.schemas_for(record.role) or None
    last_error: str | None = None
    while record.steps < max_steps:
        if deadline is not None and time.monotonic() >= deadline:
            return _timed_out(record, deadline, started)
        if on_step is not None:
            on_step(record)
        try:
            completion = client.chat(record.model, record.messages, tools, deadline=deadline)
        except LLMDeadline:
            return _timed_out(record, deadline or started, started)
        record.steps += 1
        record.usage = record.usage + completion.usage
        record.messages.append(completion.raw_message)
        if not completion.tool_calls:
            record.status, record.finalText = "done", completion.content
            return None
        finish: ToolOutcome | None = None
        for index, call in enumerate(completion.tool_calls):
            outcome = _execute(registry, record, call, ctx)
            if not outcome.ok:
                last_error = outcome.content
            if outcome.stop and outcome.after_batch:
                finish = finish or outcome
            elif outcome.stop:
                _skip_rest(record, completion.tool_calls[index + 1 :], call.name)
                record.status, record.stopValue = "stopped", outcome.value
                return None
        if finish is not None:
            record.status, record.stopValue = "stopped", finish.value
            return None
    record.status = "failed"
    record.error = f"step limit of {max_steps} reached without finishing; last tool error: " + (
        last_error or "none (the model kept calling tools)"
    )
    return None


def _execute(registry: Registry, record: RunRecord, call: ToolCall, ctx: Any) -> ToolOutcome:
    began = time.monotonic()
    outcome = registry.call(record.role, call.name, call.arguments, ctx)
    record.messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
    record.toolCalls.append(
        ToolCallRecord(
            name=call.name,
            arguments=call.arguments,
            ok=outcome.ok,
            content=outcome.content,
            durationMs=int((time.monotonic() - began) * 1000),
        )
    )
    return outcome


def _skip_rest(record: RunRecord, calls: list[ToolCall], stopper: str) -> None:
    # Every tool call needs an answer in the transcript, even the ones never run.
    for call in calls:
        record.messages.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": f"error: not run: the run ended at {stopper!r}",
            }
        )


def _timed_out(record: RunRecord, deadline: float, started: float) -> None:
    record.status = "failed"
    record.error = f"timed out after {round(deadline - started, 1):g} s"

"""The agent loop: ask the model, run the tool calls it makes, feed results back, repeat.

Real models do not always call tools the way they are asked to. An answer in plain text (where
the role must finish with a tool), a tool call written as JSON in the message text, or a
finishing call sent together with other calls each get one corrective message and the run goes
on; the step limit still bounds a model that never complies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from mimikit.llm.client import LLMDeadline
from mimikit.llm.completion import ChatClient, Completion, ToolCall
from mimikit.llm.corrections import plain_answer_correction
from mimikit.llm.registry import Registry, ToolOutcome
from mimikit.models import Model, Usage, new_id, utcnow

logger = logging.getLogger("mimikit.llm")

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
    """One LLM run: its transcript, tool calls, token usage and outcome."""

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
    text_ends_run: bool = True,
    record: RunRecord | None = None,
    observer: Observer | None = None,
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
        text_ends_run: Whether a plain answer ends the run (the Teller's reply); otherwise it
            is corrected and the run goes on until a tool ends it.
        record: The record to fill (a caller that keeps it however the run ends); a new one
            when omitted.
        observer: Called with each step as it happens: an LLM call (``kind: llm``, its usage
            and text) or a tool call (``kind: tool``, its arguments and bounded output).

    Returns:
        The run record: status "done" (plain answer, see ``finalText``), "stopped" (a tool
        ended the run, see ``stopValue``) or "failed" (step limit or deadline, see ``error``).

    Raises:
        LLMUnavailable: The LLM is not configured or cannot be reached.
    """
    record = record or RunRecord(role=role, model=model)
    record.messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": user_prompt},
    ]
    loop = _Loop(client, record, registry, ctx, max_steps, deadline, on_step, text_ends_run)
    loop.observer = observer
    try:
        loop.run()
    finally:
        record.durationMs = int((time.monotonic() - loop.started) * 1000)
    logger.info("%s run %s %s after %d steps", role, record.id, record.status, record.steps)
    return record


class _Loop:
    """The steps of one run: each asks the model, then handles its answer."""

    def __init__(self, client: ChatClient, record: RunRecord, registry: Registry, ctx: Any,
                 max_steps: int, deadline: float | None,
                 on_step: Callable[[RunRecord], None] | None, text_ends_run: bool) -> None:
        self.client, self.record, self.registry, self.ctx = client, record, registry, ctx
        self.max_steps, self.deadline, self.on_step = max_steps, deadline, on_step
        self.text_ends_run = text_ends_run
        self.started = time.monotonic()
        self.last_error: str | None = None
        self.tools = registry.schemas_for(record.role) or None
        self.observer: Observer | None = None

    def run(self) -> None:
        record = self.record
        while record.steps < self.max_steps:
            completion = self._ask()
            if completion is None:
                return
            if not completion.tool_calls:
                if self._plain_answer(completion.content):
                    return
            elif self._run_calls(completion.tool_calls):
                return
        record.status = "failed"
        record.error = (f"step limit of {self.max_steps} reached without finishing; last tool "
                        f"error: {self.last_error or 'none (the model kept calling tools)'}")

    def _ask(self) -> Completion | None:
        """One LLM request; None when the run timed out (its record says so)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self._timed_out(self.deadline)
            return None
        if self.on_step is not None:
            self.on_step(self.record)
        began = time.monotonic()
        try:
            completion = self.client.chat(self.record.model, self.record.messages, self.tools,
                                          deadline=self.deadline)
        except LLMDeadline:
            self._timed_out(self.deadline or self.started)
            return None
        self.record.steps += 1
        self.record.usage = self.record.usage + completion.usage
        self.record.messages.append(completion.raw_message)
        self._observe({"kind": "llm", "model": self.record.model,
                       "usage": completion.usage.model_dump(),
                       "elapsedMs": int((time.monotonic() - began) * 1000),
                       "text": (completion.content or "")[:STEP_TEXT_LIMIT] or None,
                       "calls": [call.name for call in completion.tool_calls]})
        return completion

    def _observe(self, step: dict[str, Any]) -> None:
        if self.observer is not None:
            self.observer({"step": self.record.steps, **step})

    def _observe_call(self, call: ToolCallRecord) -> None:
        self._observe({"kind": "tool", "name": call.name,
                       "arguments": call.arguments[:STEP_TEXT_LIMIT], "ok": call.ok,
                       "output": call.content[:STEP_TEXT_LIMIT], "durationMs": call.durationMs})

    def _plain_answer(self, content: str | None) -> bool:
        """True when a plain answer ends the run; otherwise it is corrected."""
        correction = plain_answer_correction(content, self.registry, self.record.role,
                                             self.text_ends_run)
        if correction is None:
            self.record.status, self.record.finalText = "done", content
            return True
        self.record.messages.append({"role": "user", "content": correction})
        self.last_error = correction
        return False

    def _run_calls(self, calls: list[ToolCall]) -> bool:
        """Run one message's tool calls; True when one of them ended the run."""
        finish: ToolOutcome | None = None
        for index, call in enumerate(calls):
            if len(calls) > 1 and self.registry.must_be_alone(self.record.role, call.name):
                outcome = self._refuse(call, f"{call.name!r} ends the run: call it alone, in a "
                                             "message of its own, once your other calls' results "
                                             "are in")
            else:
                outcome = _execute(self.registry, self.record, call, self.ctx)
            self._observe_call(self.record.toolCalls[-1])
            if not outcome.ok:
                self.last_error = outcome.content
            if outcome.stop and outcome.after_batch:
                finish = finish or outcome
            elif outcome.stop:
                _skip_rest(self.record, calls[index + 1 :], call.name)
                self.record.status, self.record.stopValue = "stopped", outcome.value
                return True
        if finish is not None:
            self.record.status, self.record.stopValue = "stopped", finish.value
            return True
        return False

    def _refuse(self, call: ToolCall, reason: str) -> ToolOutcome:
        content = f"error: {reason}"
        self.record.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        self.record.toolCalls.append(ToolCallRecord(name=call.name, arguments=call.arguments,
                                                    ok=False, content=content, durationMs=0))
        return ToolOutcome(ok=False, content=content)

    def _timed_out(self, deadline: float) -> None:
        self.record.status = "failed"
        self.record.error = f"timed out after {round(deadline - self.started, 1):g} s"


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

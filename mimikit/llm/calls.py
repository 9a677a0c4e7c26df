"""The calls of one run: each run (or given back from the run's journal when the run is
delivered again), and kept in its transcript and record, and published as a live step."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mimikit.llm.completion import ToolCall
from mimikit.llm.journal import INTERRUPTED, Replay, journaled, replayed
from mimikit.llm.record import STEP_TEXT_LIMIT, RunRecord, ToolCallRecord
from mimikit.llm.registry import Registry, ToolOutcome


class Calls:
    """Runs the calls of the run ``record`` keeps, through ``registry``."""

    def __init__(self, record: RunRecord, registry: Registry, ctx: Any, replay: Replay,
                 observe: Callable[[dict[str, Any]], None]) -> None:
        self.record, self.registry, self.ctx = record, registry, ctx
        self.replay, self.observe = replay, observe

    def run(self, call: ToolCall) -> ToolOutcome:
        """Run one call (or give back its journaled result), and record it."""
        began = time.monotonic()
        recorded = self.replay.result(call.id)
        if recorded is not None and recorded.get("interrupted") and \
                self.registry.idempotent(self.record.role, call.name):
            recorded = None  # it may run again: its effect, if it happened, is not repeated
        if recorded is None:
            self.replay.write_start(call.id)
            if hasattr(self.ctx, "call_id"):
                self.ctx.call_id = call.id
            outcome = self.registry.call(self.record.role, call.name, call.arguments, self.ctx)
            self._note(call, outcome, int((time.monotonic() - began) * 1000))
            self.replay.write_done(call.id, journaled(outcome, self.ctx))  # with the note
            return outcome
        if recorded.get("interrupted"):
            outcome = ToolOutcome(ok=False, content=INTERRUPTED)
        else:
            outcome = replayed(recorded, self.ctx)
        self._note(call, outcome, int((time.monotonic() - began) * 1000))
        return outcome

    def refuse(self, call: ToolCall, reason: str) -> ToolOutcome:
        """Record ``call`` as not run, for ``reason``."""
        outcome = ToolOutcome(ok=False, content=f"error: {reason}")
        self._note(call, outcome, 0)
        return outcome

    def blocker(self, others: list[ToolCall]) -> str:
        """Why a finisher beside ``others`` (just run) may not run yet ('' when it may)."""
        results = {entry.name: entry for entry in self.record.toolCalls[-len(others):]}
        for other in others:
            entry = results.get(other.name)
            if entry is not None and not entry.ok:
                return f"{other.name!r} failed"
            if self.registry.reads(self.record.role, other.name):
                return f"{other.name!r} answers with something to read first"
        return ""

    def skip(self, calls: list[ToolCall], stopper: str) -> None:
        """Answer ``calls`` as never run: the run ended at ``stopper`` (every tool call needs
        an answer in the transcript)."""
        for call in calls:
            self.record.messages.append({"role": "tool", "tool_call_id": call.id,
                                         "content": f"error: not run: the run ended at "
                                                    f"{stopper!r}"})

    def in_words(self, outcomes: list[tuple[ToolCall, ToolOutcome]]) -> None:
        """After an object of the schema, its calls' results as one message for the model
        (the transcript then has no tool messages, which its template might not take)."""
        tool_messages = [m for m in self.record.messages if m.get("role") == "tool"]
        for message in tool_messages[-len(outcomes):]:
            self.record.messages.remove(message)
        lines = [f"- {call.name}: {outcome.content[:STEP_TEXT_LIMIT]}"
                 for call, outcome in outcomes]
        self.record.messages.append({"role": "user", "content": "Results:\n" + "\n".join(lines)})

    def _note(self, call: ToolCall, outcome: ToolOutcome, elapsed_ms: int) -> None:
        self.record.messages.append({"role": "tool", "tool_call_id": call.id,
                                     "content": outcome.content})
        entry = ToolCallRecord(name=call.name, arguments=call.arguments, ok=outcome.ok,
                               content=outcome.content, durationMs=elapsed_ms)
        self.record.toolCalls.append(entry)
        if isinstance(seen := getattr(self.ctx, "seen", None), list) and \
                not self.registry.must_be_alone(self.record.role, call.name):
            seen.extend((call.arguments, outcome.content))  # a finisher's words show nothing
        if hasattr(self.ctx, "shown"):  # what the last call showed where it read, or its error
            reads = self.registry.reads(self.record.role, call.name)
            self.ctx.shown = outcome.content if outcome.ok and reads else None
            self.ctx.failed = f"{call.name}: {outcome.content}" if reads and not outcome.ok \
                else None
        self.observe({"kind": "tool", "name": call.name,
                      "arguments": call.arguments[:STEP_TEXT_LIMIT], "ok": outcome.ok,
                      "output": outcome.content[:STEP_TEXT_LIMIT], "durationMs": elapsed_ms})

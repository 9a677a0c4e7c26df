"""The Worker backends besides the agent loop, behind one interface: an engine that fills a
run ``Session`` (``agents.common.BACKENDS`` names them).

- ``llm``: the agent loop with the Worker's tools (shell, files, submit_result).
- ``codex``: ``codex exec`` as a subprocess, given the Worker's role prompt and the task,
  checked against the budgets before it starts and booked with the tokens it reports, each of
  its events a live step and a line of the transcript, killed with its process group on a
  cancel or the deadline. It runs in a host slot, like a shell command (``workspace.slots``).
"""

from __future__ import annotations

import time
from typing import Any

from mimikit.agents.session import Session
from mimikit.exceptions import WaitStopped
from mimikit.llm.record import ToolCallRecord
from mimikit.models import Usage
from mimikit.workspace.codex import CodexOutcome, run_codex
from mimikit.workspace.slots import slots_for

STEP_TEXT_LIMIT = 2000


def codex_engine(session: Session) -> None:
    """Run the task with ``codex exec`` and record it like an agent run."""
    record, settings = session.record, session.runtime.settings
    record.messages = [{"role": "system", "content": session.system},
                       {"role": "user", "content": session.user}]
    steps = _CodexSteps(session)

    def stop() -> bool:
        return time.monotonic() > session.deadline or bool(session.cancel and
                                                           session.cancel.is_set())

    def work() -> tuple[CodexOutcome, Usage]:
        try:
            with slots_for(settings).hold(stop):
                outcome = run_codex(f"{session.system}\n\n{session.user}",
                                    settings.work_dir.resolve(),
                                    timeout=max(session.deadline - time.monotonic(), 0.05),
                                    model=settings.worker_model, cancel_event=session.cancel,
                                    on_event=steps.take)
        except WaitStopped as error:
            outcome = CodexOutcome("failed", error=f"canceled: {error}")
        return outcome, steps.usage

    began = time.monotonic()
    outcome = session.meter.spend(record.messages, work)
    record.usage, record.steps = steps.usage, max(steps.turns, 1)
    record.durationMs = int((time.monotonic() - began) * 1000)
    if outcome.error is None or outcome.result:
        record.status = "stopped"
        record.stopValue = {"status": outcome.status, "resultType": outcome.resultType,
                            "result": outcome.result,
                            **({"error": outcome.error} if outcome.error else {})}
    else:
        record.status, record.error = "failed", outcome.error


class _CodexSteps:
    """Turns codex's JSON events into live steps, transcript lines and usage."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.usage = Usage()
        self.turns = 0
        self.step = 0

    def take(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", ""))
        if kind == "turn.completed":
            self.turns += 1
            self.usage = self.usage + _usage(event.get("usage") or {})
        item = event.get("item") if kind == "item.completed" else None
        if isinstance(item, dict):
            self._item(item)

    def _item(self, item: dict[str, Any]) -> None:
        record, observe = self.session.record, self.session.observe
        self.step += 1
        if item.get("type") == "command_execution":
            command, output = str(item.get("command", "")), str(item.get("aggregated_output", ""))
            record.toolCalls.append(ToolCallRecord(
                name="shell", arguments=command, ok=item.get("exit_code") in (0, None),
                content=output[:STEP_TEXT_LIMIT], durationMs=0))
            if observe:
                observe({"step": self.step, "kind": "tool", "name": "shell",
                         "arguments": command[:STEP_TEXT_LIMIT],
                         "output": output[:STEP_TEXT_LIMIT], "ok": True, "durationMs": 0})
            return
        text = str(item.get("text", ""))
        record.messages.append({"role": "assistant", "content": text})
        if observe:
            observe({"step": self.step, "kind": "llm", "model": record.model,
                     "text": text[:STEP_TEXT_LIMIT] or None, "calls": []})


def _usage(raw: dict[str, Any]) -> Usage:
    prompt, answer = int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0)
    return Usage(promptTokens=prompt, completionTokens=answer, totalTokens=prompt + answer)


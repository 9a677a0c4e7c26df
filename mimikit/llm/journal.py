"""The journal of a run: each step written down before the next one starts, so a run that is
delivered again resumes where the last one stopped.

Three kinds of entries, in order: ``answer`` (the model's answer to request ``step``),
``start`` (a tool call is about to run) and ``done`` (its result, with what the call left in
the run's context). A run replays them: an answer is not asked for again, a finished call is
not run again (its result is given back as it was), and a call that started without finishing
is reported to the model as interrupted, its outcome unknown.
"""

from __future__ import annotations

from typing import Any, Protocol

from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.registry import ToolOutcome
from mimikit.models import Usage, new_id

INTERRUPTED = ("error: interrupted: the process running this call stopped before it reported, "
               "so whether it happened is unknown. Check (e.g. look at the files) before doing "
               "it again.")


class Journal(Protocol):
    """Where a run's steps are written (``store.journal.RunJournal`` keeps them in Redis)."""

    def entries(self) -> list[dict[str, Any]]:
        """Every entry written so far, oldest first."""

    def append(self, entry: dict[str, Any]) -> None:
        """Write one entry (durably, before the run goes on)."""


class Replay:
    """What a journal holds, looked up by step and by call id as a run goes over it again."""

    def __init__(self, journal: Journal | None) -> None:
        self.journal = journal
        entries = journal.entries() if journal is not None else []
        self.answers = {e["step"]: e for e in entries if e.get("kind") == "answer"}
        self.started = {e["id"] for e in entries if e.get("kind") == "start"}
        self.done = {e["id"]: e for e in entries if e.get("kind") == "done"}
        # What the ids of the run's calls that came without one begin with: the same in every
        # replay, and another in every run (a call's effect is named by its id).
        first = self.answers.get(min(self.answers)) if self.answers else None
        self.run = str(first.get("run")) if first and first.get("run") else new_id("r")

    @property
    def empty(self) -> bool:
        return not self.answers

    def answer(self, step: int) -> Completion | None:
        """The recorded answer to request ``step``, if the run got one before."""
        entry = self.answers.get(step)
        if entry is None:
            return None
        calls = [ToolCall(**call) for call in entry.get("calls", [])]
        return Completion.of(entry.get("content"), calls, Usage(**entry.get("usage", {})),
                             entry.get("finish"))

    def result(self, call_id: str) -> dict[str, Any] | None:
        """The recorded end of a call: its entry, or ``{"interrupted": True}`` when it started
        and never finished; None when it never started."""
        if call_id in self.done:
            return self.done[call_id]
        if call_id in self.started:
            return {"interrupted": True}
        return None

    def write_answer(self, step: int, completion: Completion) -> None:
        if self.journal is not None and step not in self.answers:
            self.journal.append({
                "kind": "answer", "step": step, "run": self.run, "content": completion.content,
                "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                          for c in completion.tool_calls],
                "usage": completion.usage.model_dump(), "finish": completion.finish_reason})

    def write_start(self, call_id: str) -> None:
        if self.journal is not None:
            self.journal.append({"kind": "start", "id": call_id})

    def write_done(self, call_id: str, entry: dict[str, Any]) -> None:
        if self.journal is not None:
            self.journal.append({"kind": "done", "id": call_id, **entry})


def journaled(outcome: ToolOutcome, ctx: Any) -> dict[str, Any]:
    """What the journal keeps of a call's end: its result and what it left in the context."""
    state = ctx.snapshot() if hasattr(ctx, "snapshot") else None
    return {"ok": outcome.ok, "content": outcome.content, "value": outcome.value,
            "stop": outcome.stop, "afterBatch": outcome.after_batch, "state": state}


def replayed(entry: dict[str, Any], ctx: Any) -> ToolOutcome:
    """A finished call's outcome as the journal kept it, what it left in the context restored."""
    if entry.get("state") is not None and hasattr(ctx, "restore"):
        ctx.restore(entry["state"])
    return ToolOutcome(ok=entry["ok"], content=entry["content"], value=entry.get("value"),
                       stop=entry.get("stop", False), after_batch=entry.get("afterBatch", False))

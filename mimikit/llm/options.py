"""How one agent run goes (``RunOptions``): its limits, what ends it, and how it is asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mimikit.llm.journal import Journal
from mimikit.llm.turns import TurnShape


@dataclass
class RunOptions:
    """How one run goes.

    Args:
        max_steps: The most LLM requests the run may make.
        deadline: A ``time.monotonic()`` value after which the run fails as timed out.
        text_ends_run: Whether a plain answer ends the run (the Teller's reply); otherwise it
            is corrected until a finishing tool ends the run.
        max_tokens: The most tokens one answer may have.
        tool_choice: What every request on the native path asks for (``"required"``: some
            tool call; None: the model's choice).
        journal: Where each step is written, and read back when the run resumes.
        text_as_result: Where a finishing tool is due, what a text answer becomes once the
            corrections did not get the call (None: the run goes on to the step limit).
        shape: The role's answer as one object (``llm.turns``), asked for where the server
            holds answers to a schema.
        native_system: The system prompt for the native path, when the one given is for an
            answer held to the schema (a server that refuses the schema is asked with it).
        reply_ends_turn: A reply is all the turn may do (a Teller pass with nothing from the
            person): no answer is asked for after it.
        opening: The shape of the run's first answer, where it is narrower than ``shape``
            (a Worker's first step may not write over a file its task names that holds
            something).
    """

    max_steps: int
    deadline: float | None = None
    text_ends_run: bool = True
    max_tokens: int | None = None
    tool_choice: Any = None
    journal: Journal | None = None
    text_as_result: Callable[[str], Any] | None = None
    shape: TurnShape | None = None
    native_system: str | None = None
    reply_ends_turn: bool = False
    opening: TurnShape | None = None

    def shape_at(self, shape: TurnShape | None, step: int, ctx: Any = None) -> TurnShape | None:
        """The shape answer ``step`` is held to: the run's ``shape`` (None where answers are
        not held to one), or its opening for the first; without the calls the run's tools
        withheld from its next answer (``ctx.next_withheld``, taken: it holds once)."""
        if shape is not None and self.opening is not None and step == 1:
            shape = self.opening
        if shape is not None and (withheld := getattr(ctx, "next_withheld", ())):
            ctx.next_withheld = ()
            shape = shape.without(withheld)
        return shape

"""What a tool handler may use during one agent run."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mimikit.models import Task, Usage, load
from mimikit.store.runtime import Runtime

if TYPE_CHECKING:
    from mimikit.workspace.named import NamedFiles


@dataclass
class ToolContext:
    """Passed to every tool handler of one run."""

    runtime: Runtime
    role: str
    trace_id: str | None = None
    task: Task | None = None
    workspace: Any = None
    started: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)
    replies: list[str] = field(default_factory=list)
    staged: list[Task] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    asked: bool = False
    # A Teller pass: the Planner tasks whose needs_input it reports, and the answers it got.
    needs_input: list[str] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)
    # The journal of the run and the call being made: what makes a call's effect happen once
    # however often the run is replayed (e.g. a reply's message id).
    journal_key: str | None = None
    call_id: str | None = None
    # What the runtime told the model in this run (corrections, tools' errors): a small model
    # copies it into what it says to the user, where it is taken out (``echoes``).
    told: list[str] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)  # of those, the corrections of answers
    heard: list[str] = field(default_factory=list)  # a Teller pass: the person's messages
    results: bool = False  # a Teller pass: it holds tasks' results (each run's account beside)
    kept: list[str] = field(default_factory=list)  # what the pass's ``remember`` wrote
    listed: str = ""  # a Teller pass: what its answer said to list below it (``show``)
    # The one tool an answer held to the role's schema may call in this run (a Teller pass
    # with nothing from the person in it can only report: no request to hand over or keep).
    turn_only: str | None = None
    # Flags its structured turn must set (a pass with an answer to a task's question hands it
    # over: ``delegate`` is true whatever else the model decides).
    turn_set: tuple[str, ...] = ()
    # A pattern a structured reply must match (it begins in the script the person writes in).
    reply_pattern: str | None = None
    # Kinds of answer (``roles.Kind.words``) this run's answers held to a schema may not give
    # (a Planner task that carries the person's answer: asking again would never end).
    withheld_kinds: tuple[str, ...] = ()
    # The calls the run's first answer may not make, where answers are held to a schema (a
    # Worker whose task names a file that holds something: ``agents.worker.OPENING_WITHHELD``).
    opening_withheld: tuple[str, ...] = ()
    # The calls the run's next answer may not make, where answers are held to a schema (set
    # by a tool, taken by the loop for one answer: a Worker that gave up right after its own
    # command failed must run something first, ``tools.worker_tools._given_up``).
    next_withheld: tuple[str, ...] = ()
    # The values a one-field call may take in this run, where answers are held to a schema (a
    # Planner's ``cancel_task``: the ids of the active tasks and "none", or "nothing (...)" when
    # none is active).
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    canceled: list[str] = field(default_factory=list)  # what its cancels canceled, in words
    # The questions this run leaves open again (a Teller pass: an answer typed in the chat
    # box that was not one, ``agents.typed_answers``).
    reopened: list[Any] = field(default_factory=list)
    # A report pass whose reply only said earlier replies again (``teller_tools.post_reply``).
    copied_report: bool = False
    # The earlier replies a reply of this pass said again, word for word: the pass ends, and
    # its items are tried again without them in the history (told that its reply was a copy,
    # the 1.5B model said it again five more times, then in the next pass).
    copied: list[str] = field(default_factory=list)
    # A report pass: its results as shown to the model (a report naming a file they do not
    # name is a copy of an earlier one: the 1.5B told a failed "remove backup.txt" as the
    # failure of scores.csv; one saying an earlier report's sentences again adds them to it).
    reported: str | None = None
    # ... and the numbers its Workers' results give in their own words (one is told).
    result_numbers: set[str] = field(default_factory=set)
    # A Worker run: the files its task names that the work directory did not hold when it
    # began (``workspace.named.NamedFiles``), looked for again when it says it is done.
    named: NamedFiles | None = None
    # The system prompt the run's model reads (what its examples say: ``example_copies``).
    system: str = ""
    # What the run's model was given beside it (its first message) and each call's arguments
    # and result: a Worker's result gives no example's number or file name none of them holds
    # (``unseen_facts``).
    seen: list[str] = field(default_factory=list)
    # What the run's last call showed, where it was one that reads (a command's result, a
    # file, a listing); None after any other (``llm.calls``).
    shown: str | None = None
    failed: str | None = None  # the last call, where it read and failed: its name and error

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def once_key(self, effect: str | None = None) -> str | None:
        """A name for the effect of the call being made (or for ``effect``, one the run makes
        after its calls), the same in every replay of the run (None when the run keeps no
        journal)."""
        if self.journal_key is None or (effect or self.call_id) is None:
            return None
        return f"{self.journal_key}:{effect or self.call_id}"

    def snapshot(self) -> dict[str, Any]:
        """What the calls so far left here, for the run's journal."""
        return {"replies": list(self.replies), "created": list(self.created),
                "asked": self.asked, "listed": self.listed,
                "staged": [task.model_dump(mode="json", exclude_none=True)
                           for task in self.staged]}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what ``snapshot`` kept (a replayed call)."""
        self.replies = list(state.get("replies", []))
        self.created = list(state.get("created", []))
        self.asked = bool(state.get("asked", False))
        self.listed = str(state.get("listed", ""))
        self.staged = [load(Task, json.dumps(raw)) for raw in state.get("staged", [])]

    def add_usage(self, usage: Usage) -> None:
        """Count one completion's tokens toward this run (a reply carries the run's usage)."""
        self.usage = self.usage + usage

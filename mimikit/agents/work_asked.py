"""Whether the person's messages that a Teller pass answered in words alone ask for work:
asked of the Teller's model on its own (``agents.verdicts``), one message at a time, as a
choice among what a message can be.

Inside its long prompt, a small model answers a request for work with a promise ("I'll cancel
the water reminder.", "I'll create notes.txt…") and hands nothing over: the 0.5B model did so
for five of twelve everyday requests. Asked alone what a message is, the 0.5B model took 31
of 48 requests for work as work, and 1 of 35 other messages (chat, questions, arithmetic,
recall); the 1.5B model 41 of 48, and none of the 35. Asked "yes or no: does it ask for
work?", or with the choice in a field called "answer", the 1.5B model said yes to greetings
and recall (bench/README.md). A message taken for work is handed to the Planner in the
person's words, so that what the reply said will happen does.
"""

from __future__ import annotations

from mimikit.agents.verdicts import choice
from mimikit.tools.context import ToolContext

ASKED = 'Message: "{message}"'
FIELD = "kind"
WORK = "task to do (files, commands, reminders, schedules)"
KINDS = ("greeting or chat", "question", "something to remember", WORK)


def asks_for_work(ctx: ToolContext) -> bool:
    """Whether a message of the pass (``ctx.heard``) asks for work, in the model's judgment;
    no where it cannot say (the pass stays as the model left it)."""
    for message in ctx.heard:
        kind = choice(ctx.runtime, "teller", ctx.trace_id, ASKED.format(message=message),
                      FIELD, KINDS)
        ctx.runtime.events.log("message_kind_judged", traceId=ctx.trace_id, kind=kind)
        if kind == WORK:
            return True
    return False

"""Step: the tasks and triggers a run staged (a Planner's delegations) are committed with its
result, started once it is recorded, and announced in the chat."""

from __future__ import annotations

from mimikit.lifecycle import submit
from mimikit.lifecycle.event import Completion
from mimikit.models import utcnow
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe
from mimikit.summaries import timing_words


def within(runtime: Runtime, completion: Completion, pipe: WritePipe) -> None:
    """Store the staged tasks in the transaction that records a ``done`` result.

    They are created now, not when staged: a ``runAt`` that passed while the Planner still
    worked is due at once, not a missed run.
    """
    staged = _committed(completion)
    now = utcnow()
    for task in staged:
        task.createdAt = now
    if staged:
        submit.stage(runtime, pipe, staged, note="planned")


def after(runtime: Runtime, completion: Completion) -> None:
    """Start the committed tasks (enqueue oneshots, install triggers) and say so."""
    staged = _committed(completion)
    submit.start(runtime, staged)
    for task in staged:
        # what was made, and when it runs: the person can see it is what they asked for
        kind = "" if task.type == "oneshot" else f" ({task.type}{timing_words(task)})"
        runtime.conversation.system(f"Task created{kind}: {task.title or task.prompt[:80]}",
                                    taskId=task.id, traceId=task.traceId)


def _committed(completion: Completion) -> list:
    return completion.delivery.staged if completion.status == "done" else []

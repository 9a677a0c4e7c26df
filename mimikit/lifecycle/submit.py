"""Submitting new tasks: store them with their fingerprints in one transaction, then start them.

Starting means: a oneshot goes to its Celery queue, a trigger gets its beat entry or its
condition indexes. Every producer of tasks goes through here: the Teller's and the Planner's
delegations, memory summaries, the ``llm_eval`` batch, tests and the benchmark.
"""

from __future__ import annotations

from functools import partial

from mimikit.delivery.dispatch import enqueue
from mimikit.models import Task
from mimikit.scheduling import triggers
from mimikit.store import fingerprints as fingerprint
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe


def submit(runtime: Runtime, tasks: list[Task], note: str | None = None, *,
           start_now: bool = True) -> list[Task]:
    """Store ``tasks`` together and start them.

    With ``start_now=False`` they are only stored: the caller runs them itself (the ``llm_eval``
    batch judges its conditions in the delivery that collected them).
    """

    def write(pipe: WritePipe) -> None:
        pipe.multi()
        stage(runtime, pipe, tasks, note)

    runtime.events.transaction(write)
    if start_now:
        start(runtime, tasks)
    return tasks


def stage(runtime: Runtime, pipe: WritePipe, tasks: list[Task], note: str | None = None) -> None:
    """Queue the writes that store ``tasks`` and their fingerprints into an open transaction
    (the Planner's delegations commit with its result); ``start`` them once it committed."""
    runtime.tasks.queue_new(pipe, tasks, note)
    for task in tasks:
        fingerprint.remember(runtime, task, pipe)


def start(runtime: Runtime, tasks: list[Task]) -> None:
    """Enqueue the committed oneshots (noting their Celery ids) and install the triggers."""
    for task in tasks:
        if task.is_trigger:  # one trigger that cannot start must not keep the others back
            triggers.guarded(runtime, task.id, "install",
                             partial(triggers.install, runtime, task), None)
        else:
            task.celeryId = enqueue(runtime, task)

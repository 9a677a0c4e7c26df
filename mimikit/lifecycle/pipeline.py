"""The completion pipeline: every way a task ends goes through ``finish``.

A step is a module with up to three functions, each given the runtime and the ``Completion``:
``before`` (decide, read what the others need), ``within`` (queue writes into the transaction
that records the outcome, given its pipe) and ``after`` (act once the outcome is recorded).
``STEPS`` is their order; adding a step is adding its module to it.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

from mimikit.lifecycle import budget, children, memory_sink, notify, routing
from mimikit.lifecycle.event import Completion
from mimikit.models import Task
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe

log = logging.getLogger("mimikit.lifecycle")
# The order: the budget step may silence the report, children commit with the outcome,
# routing reads the dependents before and retires them after, the person is told last (with
# what the routing retired), memory sinks take their results.
STEPS: tuple[ModuleType, ...] = (budget, children, routing, notify, memory_sink)


def finish(runtime: Runtime, completion: Completion) -> Task | None:
    """Record how ``completion.task`` ended and run every step; the finished task, or None
    when it had already finished (another delivery recorded it: nothing else happens)."""
    for step in STEPS:
        _call(step, "before", runtime, completion)

    def within(pipe: WritePipe, task: Task) -> None:
        completion.recorded = task
        for step in STEPS:
            _call(step, "within", runtime, completion, pipe)

    recorded = _record(runtime, completion, within)
    if recorded is None:
        return None
    completion.recorded = recorded
    for step in STEPS:
        _call(step, "after", runtime, completion)
    return recorded


def _record(runtime: Runtime, completion: Completion, within: Any) -> Task | None:
    if completion.canceled is not None:
        return runtime.tasks.set_status(completion.task.id, "canceled",
                                        reason=completion.canceled, also=within)
    assert completion.result is not None
    return runtime.tasks.complete(completion.result, also=within, only_if_lost=completion.lost)


def _call(step: ModuleType, phase: str, *args: Any) -> None:
    function = getattr(step, phase, None)
    if function is not None:
        function(*args)

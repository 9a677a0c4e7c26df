"""Helpers shared by the scheduling tests: building triggers, reading what they fired."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mimikit.lifecycle.submit import submit
from mimikit.models import Task


def add_trigger(runtime: Any, **fields: Any) -> Task:
    """Submit a trigger (as the Planner's commit does): store it, then install it."""
    fields.setdefault("prompt", "triggered work")
    trigger = submit(runtime, [Task(**fields)])[0]
    return runtime.tasks.require(trigger.id)


def fired(runtime: Any, trigger_id: str) -> list[Task]:
    """The oneshot tasks a trigger created, oldest first."""
    ids = [e["firedTaskId"] for e in runtime.tasks.log_of(trigger_id)
           if e["type"] == "trigger_fired"]
    return [runtime.tasks.require(i) for i in ids]


def firing_events(runtime: Any, trigger_id: str) -> list[dict[str, Any]]:
    return [e for e in runtime.tasks.log_of(trigger_id)
            if e["type"] in ("trigger_fired", "trigger_skipped")]


def slots(runtime: Any, trigger_id: str) -> list[datetime]:
    return [datetime.fromisoformat(e["slot"]) for e in firing_events(runtime, trigger_id)]

"""Editing a trigger and running it now: shared by the API, the CLI and the Teller's tools.

An edit is checked as the Planner's ``schedule`` is (same time zone, cron and path rules); a
timed trigger then continues from the next slot of its new schedule, a conditional one is
indexed anew and its files get new baselines.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mimikit.atoms.tree import ConditionArg
from mimikit.durations import Seconds
from mimikit.exceptions import InvalidValue
from mimikit.models import MAX_TASK_TIMEOUT_SECONDS, Task, utcnow
from mimikit.scheduling import triggers
from mimikit.store import fingerprints as fingerprint
from mimikit.store.runtime import Runtime
from mimikit.tasks import checks

TIMING = {"recurring": ("interval", "cron"), "scheduled": ("runAt",),
          "conditional": ("condition", "cooldown")}


class TriggerEdit(BaseModel):
    """The fields of a trigger that may change; what is left out stays as it is."""

    model_config = ConfigDict(extra="forbid")
    prompt: str | None = Field(None, min_length=1, max_length=50_000)
    title: str | None = Field(None, max_length=200)
    interval: Seconds | None = Field(None, gt=0, description="seconds (recurring)")
    cron: str | None = Field(None, description="five-field cron (recurring)")
    runAt: datetime | None = Field(None, description="ISO 8601 (scheduled)")
    condition: ConditionArg | None = None
    cooldown: Seconds | None = Field(None, ge=0)
    budget: float | None = Field(None, ge=0)
    notify: Literal["always", "on_change", "on_failure", "never"] | None = None
    priority: int | None = Field(None, ge=0, le=10)
    timeout: Seconds | None = Field(None, gt=0, le=MAX_TASK_TIMEOUT_SECONDS)
    misfire: Literal["skip", "once"] | None = None


def edit(runtime: Runtime, trigger_id: str, changes: TriggerEdit) -> tuple[Task, dict[str, Any]]:
    """Apply ``changes`` to an active trigger and restart it; returns it and what to say of it.

    Raises:
        InvalidValue: Not an active trigger, a field that does not fit its type, or a value the
            Planner's ``schedule`` would refuse too.
    """
    trigger = _active_trigger(runtime, trigger_id)
    given = changes.model_dump(exclude_unset=True)
    if not given:
        raise InvalidValue("nothing to change; give e.g. prompt, interval, cron, runAt, "
                         "condition, cooldown or budget")
    if "condition" in given:  # the model, not its dump: its paths are checked as models
        given["condition"] = changes.condition
    fields, about = _new_fields(runtime, trigger, given)
    checks.built(**{**trigger.model_dump(), **fields})  # refused here, before any write

    def change(task: Task) -> Task | None:  # on the task as it is now (it may have fired)
        return None if task.finished else checks.built(**{**task.model_dump(), **fields})

    saved = runtime.tasks.update(trigger_id, change, lambda pipe, _b, after: pipe.log(
        runtime.keys, "trigger_edited", taskId=after.id, traceId=after.traceId,
        fields=sorted(given)))
    if saved is None:
        raise InvalidValue(f"trigger {trigger_id} finished meanwhile")
    triggers.unschedule(runtime, trigger)  # the old entry or indexes
    triggers.guarded(runtime, trigger_id, "edit", lambda: triggers.install(runtime, saved), None)
    fingerprint.remember(runtime, saved)
    return saved, about


def _active_trigger(runtime: Runtime, trigger_id: str) -> Task:
    trigger = runtime.tasks.get(trigger_id)
    if trigger is None:
        raise InvalidValue(f"no task with id {trigger_id!r}; list tasks to see the ids")
    if not trigger.is_trigger:
        raise InvalidValue(f"task {trigger_id} is a oneshot task; only triggers can be edited "
                         "(cancel it and create another)")
    if trigger.finished:
        raise InvalidValue(f"trigger {trigger_id} already finished ({trigger.status})")
    return trigger


def _new_fields(runtime: Runtime, trigger: Task, given: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task fields the edit sets (timing checked as ``schedule`` checks it)."""
    misplaced = [name for kind, names in TIMING.items() if kind != trigger.type
                 for name in names if name in given]
    if misplaced:
        raise InvalidValue(f"{', '.join(misplaced)} cannot apply to a {trigger.type} trigger; "
                         f"it takes {', '.join(TIMING[trigger.type])}")
    fields = {k: v for k, v in given.items() if k not in ("interval", "cron", "runAt")}
    about: dict[str, Any] = {}
    if "condition" in given:
        fields["condition"] = checks.checked_condition(runtime, given["condition"])
    timing = {k: given[k] for k in ("interval", "cron", "runAt") if k in given}
    if timing:
        if "interval" in timing and "cron" in timing:
            raise InvalidValue("give either interval or cron, not both")
        fields["schedule"], about = checks.timed_schedule(
            runtime, trigger.type, utcnow(), interval=timing.get("interval"),
            cron=timing.get("cron"), run_at=timing.get("runAt"))
    return fields, about


def run_now(runtime: Runtime, trigger_id: str) -> Task:
    """Fire a trigger once, now, outside its schedule or condition; returns the task it made.

    Raises:
        InvalidValue: Not an active trigger.
    """
    trigger = _active_trigger(runtime, trigger_id)
    child = triggers.child_of(trigger, catch_up=False)
    fired = triggers.commit_firing(runtime, trigger, f"manual:{uuid.uuid4().hex}",
                                   lambda task: task, child, {"manual": True})
    if fired is None:
        raise InvalidValue(f"trigger {trigger_id} finished meanwhile")
    return child

"""Step: a run stopped by its trigger's budget pauses the trigger, which tells the person once
for all its firings (the run itself is not reported)."""

from __future__ import annotations

from mimikit.lifecycle.event import Completion
from mimikit.scheduling.control import pause
from mimikit.store.runtime import Runtime


def before(runtime: Runtime, completion: Completion) -> None:
    if completion.delivery.budget_scope == "trigger":
        completion.quiet = True


def after(runtime: Runtime, completion: Completion) -> None:
    delivery = completion.delivery
    if delivery.budget_scope == "trigger" and delivery.budget_ident:
        reason = completion.result.error if completion.result else None
        pause(runtime, delivery.budget_ident, reason=reason or "over its budget", source="budget")

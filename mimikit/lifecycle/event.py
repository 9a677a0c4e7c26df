"""What a finished run hands to the completion pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

from mimikit.models import Result, Task


def canceled_by(source: str) -> str:
    """The reason recorded for a cancel asked for by ``source`` (``user``, ``planner``...)."""
    return f"canceled by {source}"


# Cancels that whoever made them tells the person of (the Planner in its result, the Teller in
# its reply): a notice of them would cost a Teller call that says it again.
REPORTED_CANCELS = frozenset(canceled_by(source) for source in ("planner", "teller"))


@dataclass
class Delivery:
    """What one delivery of a task produced besides its result.

    Args:
        celery_id: The Celery task id of the delivery (None: not run by Celery).
        staged: Tasks and triggers the run created, committed with its result (a Planner's
            delegations).
        budget_scope: ``trigger`` / ``task`` / ``day`` when a budget stopped the run.
        budget_ident: The id of the trigger, task or day whose budget it was.
    """

    celery_id: str | None = None
    staged: list[Task] = field(default_factory=list)
    budget_scope: str | None = None
    budget_ident: str | None = None


@dataclass
class Completion:
    """The end of a task: its result, or its cancel with the reason.

    The steps of the pipeline read and fill it: ``tell`` (whether the person hears of it),
    ``dependents`` (the triggers waiting on it, read once), ``retired`` (the dependents it made
    spent), ``recorded`` (the task as finished, once written).
    """

    task: Task
    result: Result | None = None
    canceled: str | None = None
    delivery: Delivery = field(default_factory=Delivery)
    tell: bool = False
    quiet: bool = False  # told in another task's report (a dependent retired by its upstream)
    lost: bool = False  # its worker died: recorded only while no delivery holds it
    dependents: list[str] = field(default_factory=list)
    retired: list[Task] = field(default_factory=list)
    recorded: Task | None = None

    @property
    def status(self) -> str:
        """``done``, ``failed``, ``needs_input`` or ``canceled``."""
        if self.canceled is not None:
            return "canceled"
        assert self.result is not None
        return self.result.status

    @property
    def label(self) -> str:
        """How the task is named to the person."""
        return self.task.title or self.task.prompt[:80]

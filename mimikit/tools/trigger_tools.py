"""The Teller's one tool to steer a trigger the person asks about: pause, resume, run now, edit.

One tool instead of four keeps the Teller's prompt small (it is sent with every request); the
edit's fields are checked when it is called, and every problem comes back as a message naming
the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from mimikit.exceptions import InvalidValue, ToolError
from mimikit.llm.registry import Registry
from mimikit.scheduling import control
from mimikit.tasks.checks import problems
from mimikit.tasks.edit import TriggerEdit, edit, run_now
from mimikit.tools.args import Args
from mimikit.tools.context import ToolContext


class ManageTriggerArgs(Args):
    taskId: str = Field(min_length=1, description="the trigger's id (see list_tasks)")
    action: Literal["pause", "resume", "run", "edit"]
    changes: dict[str, Any] | None = Field(
        None, description="edit only: the fields to change, e.g. {\"cron\": \"0 9 * * 1-5\"} "
                          "(prompt, title, interval, cron, runAt, condition, cooldown, budget, "
                          "notify, priority, timeout, misfire)")


def register(registry: Registry) -> None:
    teller = {"teller"}

    @registry.tool("manage_trigger", roles=teller)
    def manage_trigger(ctx: ToolContext, args: ManageTriggerArgs) -> dict[str, Any]:
        """Pause, resume, run now or edit a trigger (recurring, scheduled or conditional work)."""
        runtime, task_id = ctx.runtime, args.taskId
        if args.action == "pause":
            return _outcome(*control.pause(runtime, task_id, "paused at the user's request",
                                           source="teller"))
        if args.action == "resume":
            return _outcome(*control.resume(runtime, task_id, source="teller"))
        try:
            if args.action == "run":
                return {"taskId": run_now(runtime, task_id).id}
            edited, about = edit(runtime, task_id, _changes(args.changes))
        except InvalidValue as error:
            raise ToolError(str(error)) from None
        return {"taskId": edited.id, "edited": True, **about}


def _changes(raw: dict[str, Any] | None) -> TriggerEdit:
    if not raw:
        raise ToolError("action 'edit' needs 'changes', an object of the fields to change, "
                        'e.g. {"cron": "0 9 * * 1-5"} or {"prompt": "..."}')
    try:
        return TriggerEdit.model_validate(raw)
    except ValidationError as error:
        raise ToolError(f"invalid changes: {problems(error)}") from None


def _outcome(success: bool, message: str) -> dict[str, Any]:
    if not success:
        raise ToolError(message)
    return {"success": True, "status": message}

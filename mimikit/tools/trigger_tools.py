"""The Teller's tools to steer triggers the person asks about: pause, resume, run now, edit."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mimikit.exceptions import InvalidValue, ToolError
from mimikit.llm.registry import Registry
from mimikit.scheduling import control
from mimikit.tasks.edit import TriggerEdit, edit, run_now
from mimikit.tools.args import Args
from mimikit.tools.context import ToolContext


class TriggerArgs(Args):
    taskId: str = Field(min_length=1, description="the trigger's id (see list_tasks)")


class EditTriggerArgs(TriggerEdit):
    taskId: str = Field(min_length=1, description="the trigger's id (see list_tasks)")


def register(registry: Registry) -> None:
    teller = {"teller"}

    @registry.tool("pause_task", roles=teller)
    def pause_task(ctx: ToolContext, args: TriggerArgs) -> dict[str, Any]:
        """Pause a trigger: it keeps its schedule or condition but does not fire until resumed."""
        return _outcome(*control.pause(ctx.runtime, args.taskId, "paused at the user's request",
                                       source="teller"))

    @registry.tool("resume_task", roles=teller)
    def resume_task(ctx: ToolContext, args: TriggerArgs) -> dict[str, Any]:
        """Resume a paused trigger (from its next slot on; what happened meanwhile is skipped)."""
        return _outcome(*control.resume(ctx.runtime, args.taskId, source="teller"))

    @registry.tool("run_task", roles=teller)
    def run_task(ctx: ToolContext, args: TriggerArgs) -> dict[str, Any]:
        """Run a trigger's work once now, whatever its schedule or condition says."""
        try:
            return {"taskId": run_now(ctx.runtime, args.taskId).id}
        except InvalidValue as error:
            raise ToolError(str(error)) from None

    @registry.tool("edit_task", roles=teller)
    def edit_task(ctx: ToolContext, args: EditTriggerArgs) -> dict[str, Any]:
        """Change a trigger: prompt, title, interval or cron (recurring), runAt (scheduled),
        condition and cooldown (conditional), budget, notify, priority, timeout, misfire."""
        changes = TriggerEdit.model_validate(args.model_dump(exclude={"taskId"},
                                                             exclude_unset=True))
        try:
            edited, about = edit(ctx.runtime, args.taskId, changes)
        except InvalidValue as error:
            raise ToolError(str(error)) from None
        return {"taskId": edited.id, "edited": True, **about}


def _outcome(success: bool, message: str) -> dict[str, Any]:
    if not success:
        raise ToolError(message)
    return {"success": True, "status": message}

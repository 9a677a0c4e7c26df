"""Tools of both the Teller and the Planner: list_tasks, cancel_task."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mimikit import tasklist
from mimikit.exceptions import ToolError
from mimikit.models import check_result
from mimikit.tools.context import ToolContext
from mimikit.tools.registry import Registry, StopRun


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListTasksArgs(Args):
    scope: Literal["queue", "running", "triggers", "all"] = "all"
    role: Literal["planner", "worker"] | None = Field(
        None, description="only with scope queue or running")


class CancelTaskArgs(Args):
    taskId: str = Field(min_length=1)


def finish_with_result(args: Any) -> StopRun:
    """End a run with a submitted result, after checking it against its resultType schema.

    ``args`` has ``status``, ``resultType``, ``result`` and ``error``; a problem becomes an
    error text that tells the model what to fix.
    """
    if args.status == "failed" and not args.error:
        raise ToolError("status failed requires 'error' saying what went wrong")
    if args.status == "done" or args.result:
        try:
            check_result(args.resultType, args.result)
        except ValueError as error:
            raise ToolError(f"{error}. Fix the result and call submit_result again.") from None
    return StopRun(args.model_dump(exclude_none=True))


def register(registry: Registry) -> None:
    roles = {"teller", "planner"}

    @registry.tool("list_tasks", roles=roles)
    def list_tasks(ctx: ToolContext, args: ListTasksArgs) -> dict[str, Any]:
        """List tasks: queued, running, triggers (recurring/scheduled/conditional) or all."""
        return {"tasks": tasklist.list_tasks(ctx.runtime, args.scope, args.role)}

    @registry.tool("cancel_task", roles=roles)
    def cancel_task(ctx: ToolContext, args: CancelTaskArgs) -> dict[str, Any]:
        """Cancel a queued task or remove a trigger (running tasks are not affected)."""
        success, message = tasklist.cancel_task(ctx.runtime, args.taskId, stop_running=False,
                                                source=ctx.role)
        if not success:
            raise ToolError(message)
        return {"success": True}

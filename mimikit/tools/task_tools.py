"""The task tools of both the Teller and the Planner: list_tasks, cancel_task."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mimikit.exceptions import ToolError
from mimikit.lifecycle.cancel import cancel_task as cancel
from mimikit.llm.registry import Registry, StopRun
from mimikit.tasks.listing import list_tasks as listing
from mimikit.tools.args import Args
from mimikit.tools.context import ToolContext

# The one choice of a Planner's cancel where no task or schedule is active
# (``ToolContext.choices``), and what the plan then says: a small model told of a failed
# cancel schedules or delegates "Cancel the water reminder" and reports it canceled.
NOTHING_ACTIVE = "nothing (no task or schedule is active)"
NOTHING_CANCELED = "Nothing was canceled: no task or schedule is active."
# The choice of a Planner's cancel, beside the ids, of none of them: held to the active ids,
# the 0.5B model asked to remove a dog reminder that did not exist canceled the one reminder
# that did (the oven's), and the person was told the dog's was.
NONE_ASKED = "none"
NONE_CANCELED = "Nothing was canceled: no active task or schedule is the one asked for."
# How Active work shows it.
NONE_LINE = f"- {NONE_ASKED}: none of the above is the one asked for"


class ListTasksArgs(Args):
    scope: Literal["queue", "running", "triggers", "all"] = "all"
    role: Literal["planner", "worker"] | None = Field(
        None, description="only with scope queue or running")


class CancelTaskArgs(Args):
    taskId: str = Field(min_length=1)


def register(registry: Registry) -> None:
    roles = {"teller", "planner"}

    @registry.tool("list_tasks", roles=roles, idempotent=True, reads=True)
    def list_tasks(ctx: ToolContext, args: ListTasksArgs) -> dict[str, Any]:
        """List tasks: queued, running, triggers (recurring/scheduled/conditional) or all."""
        return {"tasks": listing(ctx.runtime, args.scope, args.role)}

    @registry.tool("cancel_task", roles=roles, short="taskId", many=True)
    def cancel_task(ctx: ToolContext, args: CancelTaskArgs) -> dict[str, Any] | StopRun:
        """Cancel a queued task or remove a trigger (running tasks are not affected)."""
        if args.taskId == NOTHING_ACTIVE:  # its one choice: the plan ends saying so
            return _nothing_canceled(NOTHING_CANCELED)
        if args.taskId == NONE_ASKED and NONE_ASKED in ctx.choices.get("cancel_task", ()):
            if ctx.canceled:  # listed after ids it canceled (the last choice): it names none
                return {"success": True}
            return _nothing_canceled(NONE_CANCELED)
        task = ctx.runtime.tasks.get(args.taskId)
        success, message = cancel(ctx.runtime, args.taskId, stop_running=False,
                                  source=ctx.role)
        if not success:
            raise ToolError(message)
        if task is None:
            ctx.canceled.append(args.taskId)
            return {"success": True}
        # what was canceled, in its words: what the person is told can be checked against it
        ctx.canceled.append(task.title or task.prompt[:120])
        return {"success": True, "canceled": ctx.canceled[-1]}


def _nothing_canceled(why: str) -> StopRun:
    """The end of a plan whose cancel chose no task, saying ``why`` nothing was canceled."""
    return StopRun({"status": "done", "resultType": "text", "result": {"text": why}})

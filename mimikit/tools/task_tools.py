"""The task tools of both the Teller and the Planner: list_tasks, cancel_task."""

from __future__ import annotations

from os.path import commonprefix
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
CHOICE_WORDS = 120  # characters of a task's prompt in its choice


def cancel_choices(tasks: list[tuple[str, str]]) -> list[str]:
    """The choices a Planner's cancel is held to, one per active task (its id and prompt):
    what the prompt says that the others' do not, then the id, "drink water (task-2de6…)".
    Held to the bare ids, the 1.5B model asked "I don't need the water reminder anymore"
    beside a water and a stretch reminder canceled the stretch one (1 of 13 recorded cancels
    with two tasks or more; replayed with these choices, 13 of 13 were right): an id says
    nothing of its task, so the model's choice at its first digit is blind. Words all the
    prompts begin with ("Remind the user to") are left out, so that the choice is made at a
    word that tells the tasks apart."""
    words = [" ".join(prompt.split())[:CHOICE_WORDS].rstrip(".").split(" ")
             for _id, prompt in tasks]
    shared = len(commonprefix(words)) if len(words) > 1 else 0
    return [f"{' '.join(said[shared:] or said)} ({task_id})"
            for (task_id, _prompt), said in zip(tasks, words, strict=True)]


def chosen_id(choice: str) -> str:
    """The id a cancel's choice names (``cancel_choices``); any other value is an id itself
    (a call on a path whose answers are not held to the choices)."""
    _words, opened, rest = choice.rpartition(" (")
    return rest[:-1] if opened and rest.startswith("task-") and rest.endswith(")") else choice


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
        task_id = chosen_id(args.taskId)
        task = ctx.runtime.tasks.get(task_id)
        success, message = cancel(ctx.runtime, task_id, stop_running=False, source=ctx.role)
        if not success:
            raise ToolError(message)
        if task is None:
            ctx.canceled.append(task_id)
            return {"success": True}
        # what was canceled, in its words: what the person is told can be checked against it
        ctx.canceled.append(task.title or task.prompt[:120])
        return {"success": True, "taskId": task_id, "canceled": ctx.canceled[-1]}


def _nothing_canceled(why: str) -> StopRun:
    """The end of a plan whose cancel chose no task, saying ``why`` nothing was canceled."""
    return StopRun({"status": "done", "resultType": "text", "result": {"text": why}})

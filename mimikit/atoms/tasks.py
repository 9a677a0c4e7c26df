"""What the atoms on a task's outcome share (``task_done``, ``task_failed``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mimikit.atoms.base import Checker, Evaluation, Params, Reader
from mimikit.exceptions import InvalidValue


class TaskRef(Params):
    taskId: str = Field(min_length=1, description="a taskId that delegate or schedule returned")



def evaluate_outcome(ref: str, wanted: str, reader: Reader) -> Evaluation:
    """True when ``ref``'s latest result is ``wanted`` and new to the trigger.

    A routed result is new by definition (its firing is claimed once, by its digest); a stored
    one counts only if it came after the trigger last fired.
    """
    result, routed = reader.result_of(ref)
    if result is None:
        return Evaluation(False, [f"{ref}:none"])
    status = "failed" if result.status == "failed" else "done"
    fresh = routed or reader.since is None or result.completedAt > reader.since
    return Evaluation(status == wanted and fresh,
                      [f"{ref}:{status}@{result.completedAt.isoformat()}"])


def check_ref(params: Any, checker: Checker) -> Any:
    if not checker.knows_task(params.taskId):
        raise InvalidValue(f"condition refers to unknown task id {params.taskId!r}; use a taskId "
                           "that delegate or schedule returned, or, for work that waits on no "
                           "other task, leave out type and condition (a oneshot task runs now)")
    return params


def ref_settled(params: Any, reader: Reader) -> bool:
    return reader.settled(params.taskId)

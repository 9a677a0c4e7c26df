"""What every tool's arguments share, and the one check of a submitted result."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from mimikit.durations import Seconds
from mimikit.exceptions import InvalidValue, ToolError
from mimikit.llm.registry import StopRun
from mimikit.models import check_result

__all__ = ["Args", "Seconds", "finish_with_result"]


class Args(BaseModel):
    """Tool arguments: unknown fields are errors the model is told about."""

    model_config = ConfigDict(extra="forbid")


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
        except InvalidValue as error:
            raise ToolError(f"{error}. Fix the result and call submit_result again.") from None
    return StopRun(args.model_dump(exclude_none=True))

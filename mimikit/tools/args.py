"""What every tool's arguments share, and the one check of a submitted result."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError

from mimikit.exceptions import ToolError
from mimikit.llm.registry import StopRun
from mimikit.models import check_result

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
                 "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
                 "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
                 "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800,
                 "weeks": 604800}
_ISO_DURATION = TypeAdapter(timedelta)


def seconds(value: Any) -> Any:
    """A duration as seconds: a number, ``"90s"``, ``"5 minutes"``, ``"2h"`` or ``"PT1H"``."""
    if not isinstance(value, str):
        return value
    match = _DURATION.match(value)
    if match and match.group(2).lower() in _UNIT_SECONDS:
        return float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    try:
        return _ISO_DURATION.validate_python(value.strip()).total_seconds()
    except ValidationError:
        raise ValueError(f"{value!r} is not a duration; give seconds (e.g. 3600) or a "
                         "duration such as '90s', '5m', '2h', '1d' or 'PT1H'") from None


Seconds = Annotated[float, BeforeValidator(seconds)]


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
        except ValueError as error:
            raise ToolError(f"{error}. Fix the result and call submit_result again.") from None
    return StopRun(args.model_dump(exclude_none=True))

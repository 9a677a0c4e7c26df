"""Durations as people and models write them: ``3600``, ``"90s"``, ``"5 minutes"``, ``"2h"``,
``"PT1H"``; ``Seconds`` is a number of seconds that accepts all of them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, TypeAdapter, ValidationError, WithJsonSchema

from mimikit.exceptions import InvalidValue

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
        raise InvalidValue(f"{value!r} is not a duration; give seconds (e.g. 3600) or a "
                         "duration such as '90s', '5m', '2h', '1d' or 'PT1H'") from None


# A duration in words as ``seconds`` reads it, or in ISO 8601 ("PT1H"). Held to any text,
# the 1.5B model gave a schedule "every two hours" the timeout "2026-11-30T14:00:00", and
# the plan failed on it.
DURATION_PATTERN = (r"^([0-9]+(\.[0-9]+)? ?(" + "|".join(
    sorted((unit for unit in _UNIT_SECONDS if unit), key=len, reverse=True))
    + r")?|P[0-9DTHMSW.]+)$")

# A number of seconds or a duration in words: where answers are held to a schema, the model
# may write "30m" for "every 30 minutes" instead of 30 (seconds).
Seconds = Annotated[float, BeforeValidator(seconds), WithJsonSchema({
    "anyOf": [{"type": "number"}, {"type": "string", "pattern": DURATION_PATTERN}],
    "description": "seconds, or a duration such as '90s', '30m', '2h' or '1d'"})]


def moment(value: Any) -> Any:
    """A time: as given (ISO 8601, read later), or a delay from now (``"10m"``, ``"2h"``,
    ``600``, ``"PT1H"``) as the time it ends."""
    if isinstance(value, int | float) or (isinstance(value, str) and (
            _DURATION.match(value) or value.strip().upper().startswith("PT"))):
        return datetime.now(UTC) + timedelta(seconds=seconds(value))
    return value


# A time that may be written as a delay from now: what a model means by "in ten minutes"
# needs no arithmetic on the current time.
Moment = Annotated[datetime, BeforeValidator(moment), WithJsonSchema({
    "type": "string", "description": "ISO 8601 time (without an offset: the configured time "
                                     "zone), or a delay from now such as '10m' or '2h'"})]

"""The wait an LLM server asks for before the next request (``retry-after-ms``, else
``Retry-After`` in seconds or as an HTTP date)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


def server_delay(headers: Any) -> float | None:
    """The wait the server asks for: ``retry-after-ms`` (milliseconds), else ``Retry-After``
    (seconds, or an HTTP date); None when it names none or nothing readable."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return (when - datetime.now(UTC)).total_seconds()


def _number(value: str | None) -> float | None:
    """A finite float from a header value, else None."""
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None

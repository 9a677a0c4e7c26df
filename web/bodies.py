"""What a request carries: bodies (size-limited JSON validated by a pydantic model) and query
parameters, each bad one a 400 that names it and the fix."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from flask import abort, current_app, request
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge

Body = TypeVar("Body", bound=BaseModel)


def parse_body(model: type[Body]) -> Body:
    """Validate the JSON body; a bad one is a 400 that names the field and the fix."""
    _check_body_size()
    try:
        data = request.get_json(silent=True)
    except RecursionError:  # not a ValueError, so ``silent`` does not cover it
        abort(400, description="the body nests too deeply to be read; send a flat JSON object")
    if not isinstance(data, dict):
        abort(400, description="the body must be a JSON object with Content-Type: application/json")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        abort(400, description="; ".join(_describe(item) for item in error.errors()))


def _check_body_size() -> None:
    """Raise 413 for a body over the limit, also a chunked one (it has no Content-Length).

    The server stops reading a chunked body at the limit without an error, so a body that
    fills the limit was cut short: JSON parsing would then fail with a misleading 400.
    """
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    data = request.get_data(cache=True)  # a RequestEntityTooLarge raised here is a 413 too
    if limit is not None and request.content_length is None and len(data) >= limit:
        raise RequestEntityTooLarge(f"the body is larger than the limit of {limit} bytes")


def _describe(item: Any) -> str:
    field = ".".join(str(p) for p in item["loc"]) or "body"
    return f"field '{field}': {item['msg']}"


def arg_int(name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter within ``low``..``high`` (``default`` when absent)."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        abort(400, description=f"query parameter '{name}' must be an integer, got {raw!r}")
    if not low <= value <= high:
        abort(400, description=f"query parameter '{name}' must be between {low} and {high}")
    return value


def arg_time(name: str) -> datetime | None:
    """An ISO 8601 query parameter as an aware UTC time (a naive one is read in
    ``MIMIKIT_TIMEZONE``, as every time without an offset is)."""
    raw = request.args.get(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=current_app.extensions["mimikit"].settings.tz)
        value = value.astimezone(UTC)
        value.timestamp()  # years 1 and 9999 at the edges of the range have no timestamp
    except (ValueError, OverflowError):
        abort(400, description=f"query parameter '{name}' must be an ISO 8601 time between "
                               f"the years 1 and 9999, e.g. 2025-01-31T12:00:00Z; got {raw!r}")
    return value

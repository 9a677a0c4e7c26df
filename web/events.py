"""``GET /api/events``: Server-Sent Events from a Redis stream, resumable with Last-Event-ID."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, Response, request, stream_with_context

from web.auth import check_token
from web.context import runtime

bp = Blueprint("events", __name__)
KEEPALIVE_MS = 15_000


@bp.get("/api/events")
def events() -> Response:
    check_token(allow_query=True)
    state = runtime().state
    last_id = request.headers.get("Last-Event-ID") or request.args.get("lastEventId") or "$"
    if last_id != "$" and not _valid_stream_id(last_id):
        last_id = "$"
    if last_id == "$":
        last_id = _latest_id(state) or "0-0"

    def stream() -> Iterator[str]:
        cursor = last_id
        yield "retry: 2000\n\n"
        while True:
            batch = state.read_events(cursor, block_ms=KEEPALIVE_MS)
            if not batch:
                yield ": keep-alive\n\n"
                continue
            for entry_id, event, data in batch:
                cursor = entry_id
                yield f"id: {entry_id}\nevent: {event}\ndata: {data}\n\n"

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(stream()), mimetype="text/event-stream", headers=headers)


def _latest_id(state: object) -> str | None:
    entries = state.redis.xrevrange(state.keys.events, count=1)  # type: ignore[attr-defined]
    return entries[0][0].decode() if entries else None


def _valid_stream_id(value: str) -> bool:
    left, _, right = value.partition("-")
    return left.isdigit() and (right.isdigit() or right == "")


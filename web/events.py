"""``GET /api/events``: Server-Sent Events from a Redis stream, resumable with Last-Event-ID.

Events written to the ``KEY_PREFIX:events`` stream (``message``, ``task``, ``question``) carry
their stream id, so a browser that reconnects with ``Last-Event-ID`` gets what it missed. A
``status`` event (the ``GET /api/status`` report, without an id) is sent on connect and whenever
the Teller's state changes, so the page can show "thinking" without polling.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, request, stream_with_context
from redis.exceptions import RedisError

from mimikit import cluster
from mimikit.runtime import Runtime
from mimikit.teller_gate import teller_state
from web.auth import check_token
from web.context import runtime

bp = Blueprint("events", __name__)
log = logging.getLogger("mimikit.web.events")
POLL_MS = 1000  # how often the Teller state is looked at while no event arrives
KEEPALIVE_SECONDS = 15.0
RETRY_MS = 2000


@bp.get("/api/events")
def events() -> Response:
    check_token(allow_query=True)
    rt = runtime()
    last_id = request.headers.get("Last-Event-ID") or request.args.get("lastEventId") or ""
    # Fix the starting point now, before the response starts: an event written after this
    # request arrived is delivered even if the first read happens later.
    cursor = last_id if _valid_stream_id(last_id) else (_latest_id(rt) or "0-0")
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(_stream(rt, cursor)), mimetype="text/event-stream",
                    headers=headers)


def _stream(rt: Runtime, cursor: str) -> Iterator[str]:
    yield f"retry: {RETRY_MS}\n\n"
    teller_was, quiet_since = None, time.monotonic()
    while True:
        try:
            batch = rt.state.read_events(cursor, block_ms=POLL_MS)
            teller_now = teller_state(rt)["state"]
            status = cluster.status(rt) if teller_now != teller_was else None
        except RedisError as error:
            # End the stream; the browser reconnects after RETRY_MS with its Last-Event-ID.
            log.warning("event stream stopped: Redis error: %s", error)
            return
        for entry_id, event, data in batch:
            cursor = entry_id
            yield frame(event, data, entry_id)
        if status is not None:
            teller_was = teller_now
            yield frame("status", json.dumps(status, default=str))
        if batch or status is not None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"


def frame(event: str, data: str, event_id: str | None = None) -> str:
    """One SSE frame; every line of ``data`` gets its own ``data:`` field."""
    head = f"id: {event_id}\n" if event_id else ""
    body = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"{head}event: {event}\n{body}\n"


def _latest_id(rt: Runtime) -> str | None:
    entries: list[Any] = rt.redis.xrevrange(rt.keys.events, count=1)
    return entries[0][0].decode() if entries else None


def _valid_stream_id(value: str) -> bool:
    left, _, right = value.partition("-")
    return left.isdigit() and (right.isdigit() or right == "")

"""``GET /api/events``: Server-Sent Events from a Redis stream, resumable with Last-Event-ID.

Events written to the ``KEY_PREFIX:events`` stream (``message``, ``task``, ``question``) carry
their stream id, so a browser that reconnects with ``Last-Event-ID`` gets what it missed. A
``status`` event (the ``GET /api/status`` report, without an id) is sent on connect and whenever
the Teller's state changes, so the page can show "thinking" without polling; within
``REPORT_REUSE_SECONDS`` of the last one, only its conversation parts are read again (a message
changes the state twice in a few milliseconds, and every open page has a stream).

Every open stream holds one server thread, so at most ``MAX_EVENT_STREAMS`` are served at once;
one more is a 503 with ``Retry-After`` (the page retries by itself).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Response, jsonify, request, stream_with_context
from redis.exceptions import RedisError

from mimikit.conversation.gate import teller_state
from mimikit.status import conversation_state, status
from mimikit.store.runtime import Runtime
from mimikit.web.context import runtime

bp = Blueprint("events", __name__)
SSE_THREADS = 64  # gunicorn threads of ``mimikit web``
# Each open stream holds a thread for as long as it lasts: keep a quarter of the threads free
# for the API and the page whatever the number of open tabs.
MAX_EVENT_STREAMS = SSE_THREADS * 3 // 4
log = logging.getLogger("mimikit.web.events")
POLL_MS = 1000  # how often the Teller state is looked at while no event arrives
KEEPALIVE_SECONDS = 15.0
REPORT_REUSE_SECONDS = 2.0
RETRY_MS = 2000
RETRY_AFTER_SECONDS = 5
STREAM_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
MAX_ID_PART = 2**64 - 1  # Redis stream ids are two unsigned 64-bit numbers
_slots = threading.BoundedSemaphore(MAX_EVENT_STREAMS)


@bp.get("/api/events")
def events() -> Any:
    if not _slots.acquire(blocking=False):
        return _unavailable(f"too many open event streams (at most {MAX_EVENT_STREAMS}); "
                            "close another tab or retry in a moment")
    release = _release_once()
    try:
        rt = runtime()
        cursor = _start_cursor(rt)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        response = Response(stream_with_context(_stream(rt, cursor)),
                            mimetype="text/event-stream", headers=headers)
    except RedisError as error:
        release()
        return _unavailable(f"cannot reach Redis: {error}; start it or run `mimikit up`")
    except BaseException:
        release()
        raise
    # Called by the server when the stream ends, the client goes away or it is never read.
    response.call_on_close(release)
    return response


def _start_cursor(rt: Runtime) -> str:
    """The id to read after: the client's Last-Event-ID when it is a valid one, else the end.

    Fixed before the response starts: an event written after this request arrived is
    delivered even if the first read happens later.
    """
    last_id = request.headers.get("Last-Event-ID") or request.args.get("lastEventId") or ""
    return last_id if _valid_stream_id(last_id) else (_latest_id(rt) or "0-0")


def _release_once() -> Callable[[], None]:
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            _slots.release()

    return release


def _unavailable(message: str) -> Any:
    response = jsonify(error=message, status=503)
    response.status_code = 503
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _stream(rt: Runtime, cursor: str) -> Iterator[str]:
    yield f"retry: {RETRY_MS}\n\n"
    teller_was, quiet_since = None, time.monotonic()
    last: tuple[float, dict[str, Any]] | None = None  # when the last whole report was made
    while True:
        try:
            batch = rt.events.read(cursor, block_ms=POLL_MS)
            for entry_id, event, data in batch:
                cursor = entry_id
                yield frame(event, data, entry_id)
            # after the events: a reply is not held up while the status is gathered
            teller_now = teller_state(rt)["state"]
            report = None
            if teller_now != teller_was:
                if last is not None and time.monotonic() - last[0] < REPORT_REUSE_SECONDS:
                    report = {**last[1], **conversation_state(rt)}
                else:
                    report = status(rt)
                    last = (time.monotonic(), report)
        except RedisError as error:
            # End the stream; the browser reconnects after RETRY_MS with its Last-Event-ID.
            log.warning("event stream stopped: Redis error: %s", error)
            return
        if report is not None:
            teller_was = teller_now
            yield frame("status", json.dumps(report, default=str))
        if batch or report is not None:
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
    """``ms-seq`` in ASCII digits, each part a 64-bit unsigned number (what XREAD accepts)."""
    match = STREAM_ID.fullmatch(value)
    return match is not None and all(int(part) <= MAX_ID_PART for part in match.groups())

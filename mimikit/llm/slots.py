"""Waiting for a free slot of a server that says how busy it is (llama.cpp's ``GET /slots``),
before a request is sent: a server whose every slot is working for another request (another
run of the instance, or another client) is slow, not gone, and the time spent waiting for it
is not the run's. A server that stops answering is gone: the request then goes as it would.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

SLOT_POLL_SECONDS = 1.0
SLOTS_TIMEOUT_SECONDS = 5.0  # an answer to GET /slots takes milliseconds
SLOT_WAIT_MAX_SECONDS = 600.0  # the longest a request waits before it is sent all the same


def slots_url(base_url: str) -> str:
    """Where a server with an OpenAI-compatible API under ``/v1`` lists its slots."""
    return base_url.rstrip("/").removesuffix("/v1") + "/slots"


def all_busy(base_url: str, api_key: str | None = None) -> bool | None:
    """Whether every slot of the server is working; None when it does not say (no such
    endpoint, or no answer)."""
    request = urllib.request.Request(slots_url(base_url), headers={
        "Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=SLOTS_TIMEOUT_SECONDS) as answer:
            slots = json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    if not isinstance(slots, list) or not slots:
        return None
    return all(isinstance(slot, dict) and slot.get("is_processing") for slot in slots)


def wait_for_slot(base_url: str, api_key: str | None, until: float | None) -> float:
    """Wait while every slot of the server is busy (at most ``SLOT_WAIT_MAX_SECONDS``, and
    not past ``until``, a ``time.monotonic()`` value); the seconds waited."""
    began = time.monotonic()
    stop = began + SLOT_WAIT_MAX_SECONDS
    while all_busy(base_url, api_key) and time.monotonic() < stop:
        time.sleep(SLOT_POLL_SECONDS)
    return time.monotonic() - began

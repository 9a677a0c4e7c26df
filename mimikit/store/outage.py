"""Riding out a Redis outage: a step that must happen is retried until Redis answers again.

A process that loses Redis in the middle of a change (a restart, a failover, a network blip)
would otherwise leave a lease held or a running task that nobody finishes. ``when_back`` retries
such a step with a growing pause, for a bounded time, then gives up with the last error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from redis.exceptions import RedisError

log = logging.getLogger("mimikit.store")
T = TypeVar("T")
OUTAGE_WAIT_SECONDS = 60.0
FIRST_PAUSE_SECONDS = 0.1
MAX_PAUSE_SECONDS = 1.0


def when_back(step: Callable[[], T], what: str, seconds: float = OUTAGE_WAIT_SECONDS) -> T:
    """Run ``step``; while it raises ``RedisError``, try again for up to ``seconds``.

    Args:
        step: The Redis work to do (it must be safe to run again after a failed try).
        what: What the step does, for the log.
        seconds: How long to keep trying.

    Returns:
        What ``step`` returned.

    Raises:
        RedisError: Redis did not answer within ``seconds``.
    """
    deadline = time.monotonic() + seconds
    pause = FIRST_PAUSE_SECONDS
    while True:
        try:
            return step()
        except RedisError as error:
            if time.monotonic() + pause > deadline:
                raise
            log.warning("%s: Redis unreachable (%s); trying again in %.1f s", what, error, pause)
            time.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE_SECONDS)

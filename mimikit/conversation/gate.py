"""One Teller at a time, cluster-wide, with wakes coalesced and none lost: every wake rule.

A wake sets a flag and enqueues a Teller run unless one is already queued. A run holds a lease
while it loops over the flag, kept alive by a thread of its own however long a pass takes
(``LeaseKeeper``: it lapses only when the process dies); after releasing the lease it looks at
the flag once more, so a wake that raced with its end starts the next run. The supervisor
wakes the Teller for anything left in the inbox (``wake_for_pending``), except while the LLM
is away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError

from mimikit.conversation import outage
from mimikit.delivery.dispatch import queue_depths, send_teller
from mimikit.models import utcnow
from mimikit.store import lease
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.teller")
STALE_QUEUED_SECONDS = 30
LEASE_SECONDS = 30  # how long a Teller whose process died keeps the others out
# Before an item that failed a pass is tried again (``conversation.tries``; a new item goes
# first, at once).
RETRY_PAUSE_SECONDS = 1.0
RENEW_SECONDS = 5


def wake(runtime: Runtime) -> bool:
    """Ask for a Teller run; coalesced with any run already queued or running."""
    return wake_teller(runtime, lambda: send_teller(pass_seconds(runtime)))


def pass_seconds(runtime: Runtime) -> float:
    """The longest one Teller pass may take: ``TELLER_TIMEOUT``, a margin, and the pause
    before an item that failed is tried again."""
    return runtime.settings.teller_timeout + 5 + RETRY_PAUSE_SECONDS


def wake_for_pending(runtime: Runtime) -> bool:
    """Wake the Teller when inputs or results wait and no Teller run is queued or running."""
    if not runtime.inbox.size() or outage.in_backoff(runtime):
        return False
    state = teller_state(runtime)["state"]
    if state == "queued":
        teller_queue_empty = queue_depths(runtime)["teller"] == 0
        if not clear_stale_queued(runtime, teller_queue_empty):
            return False
    elif state != "idle":
        return False
    return wake(runtime)


def wake_teller(runtime: Runtime, send: Callable[[], None]) -> bool:
    """Ask for a Teller run; returns True when this call enqueued one."""
    keys, redis = runtime.keys, runtime.redis
    now = utcnow().isoformat()
    pipe = redis.pipeline(transaction=False)  # one round trip: the flag, then the mark
    pipe.set(keys.teller_wake, now)
    pipe.set(keys.teller_queued, now, nx=True, ex=runtime.settings.teller_timeout + 60)
    if pipe.execute()[1]:
        try:
            send()
        except BaseException:
            redis.delete(keys.teller_queued)  # not queued after all: the next wake sends
            raise
        return True
    return False


def clear_stale_queued(runtime: Runtime, queue_empty: bool) -> bool:
    """Forget a ``queued`` mark whose Teller message was lost; True when it was cleared.

    Stale means: nothing in the teller queue, no lease, and older than ``STALE_QUEUED_SECONDS``
    or than the Redis server's run (a wake cut by Redis going away leaves its mark and no
    message: the Teller need not wait the whole 30 s once Redis is back).
    """
    redis, keys = runtime.redis, runtime.keys
    since = redis.get(keys.teller_queued)
    if since is None or not queue_empty or redis.exists(keys.teller_lock):
        return False
    age = (utcnow() - datetime.fromisoformat(since.decode())).total_seconds()
    stale = age > STALE_QUEUED_SECONDS or age > redis.info("server")["uptime_in_seconds"]
    return stale and bool(redis.delete(keys.teller_queued))


def acquire(runtime: Runtime, owner: str, is_alive: Callable[[str], bool]) -> bool:
    """Take the Teller lease (at most one holder cluster-wide).

    A lease whose holder died on this host (``is_alive`` says so) is taken over at once
    instead of blocking the Teller until it expires.
    """
    keys = runtime.keys
    pipe = runtime.redis.pipeline(transaction=False)  # one round trip when the lease is free
    pipe.delete(keys.teller_queued)
    pipe.set(keys.teller_lock, owner, nx=True, ex=LEASE_SECONDS)
    return bool(pipe.execute()[1]) or lease.take_over(runtime.redis, keys.teller_lock, owner,
                                                      LEASE_SECONDS, is_alive)


def renew(runtime: Runtime, owner: str) -> bool:
    """Extend the lease before another pass; False when it is no longer ours."""
    return lease.renew(runtime.redis, runtime.keys.teller_lock, owner, LEASE_SECONDS)


class LeaseKeeper:
    """Renews the Teller lease every ``RENEW_SECONDS`` from a thread while a run goes on;
    ``lost`` once it found the lease gone (another Teller holds it now)."""

    def __init__(self, runtime: Runtime, owner: str) -> None:
        self.runtime, self.owner = runtime, owner
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="teller-lease")

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            try:
                if not renew(self.runtime, self.owner):
                    self.lost = True
                    log.error("the Teller lease was lost while a pass ran")
                    return
            except RedisError as error:  # Redis briefly away: the lease outlives a blip
                log.warning("cannot renew the Teller lease: %s", error)


def more_to_do(runtime: Runtime) -> bool:
    """Consume the wake flag; True when a wake was pending or the inbox holds items (one
    round trip)."""
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.getdel(runtime.keys.teller_wake)
    pipe.llen(runtime.keys.inbox)
    woke, waiting = pipe.execute()
    return woke is not None or bool(waiting)


def release(runtime: Runtime, owner: str) -> bool:
    """Give the lease back; returns True when a wake arrived meanwhile (run again)."""
    pipe = runtime.redis.pipeline(transaction=False)  # one round trip
    lease.release(pipe, runtime.keys.teller_lock, owner)
    pipe.exists(runtime.keys.teller_wake)
    return bool(pipe.execute()[1])


def teller_state(runtime: Runtime) -> dict[str, Any]:
    """``idle``, ``queued`` or ``running``, for the status report."""
    redis, keys = runtime.redis, runtime.keys
    holder, queued = redis.mget([keys.teller_lock, keys.teller_queued])
    if holder:
        return {"state": "running", "owner": holder.decode()}
    if queued:
        return {"state": "queued", "since": queued.decode()}
    return {"state": "idle"}

"""Which Celery workers are alive: each registers itself in Redis and refreshes its entry.

An entry is a key with a time to live; the names are also in a sorted set by when they last
registered, so finding the live workers reads that set (pruned as it is read), never the
keyspace.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from redis.exceptions import RedisError

from mimikit.models import utcnow
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.workers")
WORKER_TTL_SECONDS = 30
REFRESH_SECONDS = 10
# A name not seen for this long leaves the set when it is read. Liveness is the entry itself;
# the margin keeps a worker whose clock is somewhat behind the reader's listed.
FORGET_NAME_SECONDS = 300


def register_worker(runtime: Runtime, info: dict[str, Any]) -> None:
    """Write the worker's entry, stamped ``seenAt`` by this host's clock (``mimikit doctor``
    compares it with the entry's age in Redis to find clock skew between hosts)."""
    now = utcnow()
    entry = {**info, "seenAt": now.isoformat()}
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.set(runtime.keys.worker(info["name"]), json.dumps(entry), ex=WORKER_TTL_SECONDS)
    pipe.zadd(runtime.keys.worker_names, {info["name"]: now.timestamp()})
    pipe.execute()


def unregister_worker(runtime: Runtime, name: str) -> None:
    """Remove the worker's entry and its name (it is stopping)."""
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.delete(runtime.keys.worker(name))
    pipe.zrem(runtime.keys.worker_names, name)
    pipe.execute()


def worker_keys(runtime: Runtime) -> list[str]:
    """The entry keys of the workers that registered lately (each may have expired since;
    names not seen for ``FORGET_NAME_SECONDS`` are dropped from the set here)."""
    names_key = runtime.keys.worker_names
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.zremrangebyscore(names_key, "-inf", f"({utcnow().timestamp() - FORGET_NAME_SECONDS}")
    pipe.zrange(names_key, 0, -1)
    _dropped, names = pipe.execute()
    return sorted(runtime.keys.worker(as_text(name)) for name in names)


def workers(runtime: Runtime) -> list[dict[str, Any]]:
    """The Celery workers that registered in the last ``WORKER_TTL_SECONDS``."""
    keys = worker_keys(runtime)
    raws = runtime.redis.mget(keys) if keys else []
    return [json.loads(raw) for raw in raws if raw]


def worker_info(consumer: Any) -> dict[str, Any]:
    """What a worker says of itself: name, queues, pid, concurrency, start time."""
    queues = sorted(q.name for q in consumer.task_consumer.queues) if consumer else []
    return {"name": consumer.hostname if consumer else f"worker@{os.getpid()}",
            "queues": queues, "pid": os.getpid(),
            "concurrency": getattr(consumer.pool, "limit", None) if consumer else None,
            "startedAt": utcnow().isoformat()}


class Registration:
    """Keeps one worker's entry alive from a background thread until ``stop``."""

    def __init__(self, runtime: Runtime, info: dict[str, Any]) -> None:
        self.runtime = runtime
        self.info = info
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="mimikit-registration").start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        name = self.info["name"]
        while True:
            try:
                register_worker(self.runtime, self.info)
            except RedisError as error:
                log.warning("cannot register worker %s: %s", name, error)
            if self._stop.wait(REFRESH_SECONDS):
                break
        try:
            unregister_worker(self.runtime, name)
        except RedisError as error:
            log.warning("cannot unregister worker %s: %s", name, error)

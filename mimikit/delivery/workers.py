"""Which Celery workers are alive: each registers itself in Redis and refreshes its entry."""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from redis.exceptions import RedisError

from mimikit.models import utcnow
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.workers")
WORKER_TTL_SECONDS = 30
REFRESH_SECONDS = 10


def register_worker(runtime: Runtime, info: dict[str, Any]) -> None:
    """Write the worker's entry, stamped ``seenAt`` by this host's clock (``mimikit doctor``
    compares it with the entry's age in Redis to find clock skew between hosts)."""
    key = runtime.keys.worker(info["name"])
    entry = {**info, "seenAt": utcnow().isoformat()}
    runtime.redis.set(key, json.dumps(entry), ex=WORKER_TTL_SECONDS)


def workers(runtime: Runtime) -> list[dict[str, Any]]:
    """The Celery workers that registered in the last ``WORKER_TTL_SECONDS``."""
    keys = sorted(runtime.redis.scan_iter(match=runtime.keys.workers_pattern, count=500))
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
            self.runtime.redis.delete(self.runtime.keys.worker(name))
        except RedisError as error:
            log.warning("cannot unregister worker %s: %s", name, error)

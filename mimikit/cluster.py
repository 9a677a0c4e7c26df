"""Who is running: worker registration in Redis, queue depths, and the status report."""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from celery.signals import worker_ready, worker_shutdown
from redis.exceptions import RedisError

from mimikit.models import utcnow
from mimikit.priority import QUEUES, queue_keys
from mimikit.runtime import Runtime, get_runtime

log = logging.getLogger("mimikit.cluster")
WORKER_TTL_SECONDS = 30
_REFRESH_SECONDS = 10
_stop = threading.Event()


def register_worker(runtime: Runtime, info: dict[str, Any]) -> None:
    key = runtime.keys.worker(info["name"])
    runtime.redis.set(key, json.dumps(info), ex=WORKER_TTL_SECONDS)


def workers(runtime: Runtime) -> list[dict[str, Any]]:
    """The Celery workers that registered in the last ``WORKER_TTL_SECONDS``."""
    keys = sorted(runtime.redis.scan_iter(match=runtime.keys.workers_pattern, count=500))
    raws = runtime.redis.mget(keys) if keys else []
    return [json.loads(raw) for raw in raws if raw]


def queue_depths(runtime: Runtime) -> dict[str, int]:
    """Messages waiting in each Celery queue (all priority levels)."""
    pipe = runtime.redis.pipeline(transaction=False)
    for queue in QUEUES:
        for key in queue_keys(queue, runtime.settings.key_prefix):
            pipe.llen(key)
    counts = iter(pipe.execute())
    levels = len(queue_keys(QUEUES[0], runtime.settings.key_prefix))
    return {queue: sum(next(counts) for _ in range(levels)) for queue in QUEUES}


def status(runtime: Runtime) -> dict[str, Any]:
    """The status report of ``GET /api/status`` and ``mimikit status``."""
    settings = runtime.settings
    llm = {"configured": settings.llm_configured, "model": settings.model_for("teller"),
           "models": {role: settings.model_for(role) for role in ("teller", "planner", "worker")}}
    if settings.llm_base_url:
        llm["baseUrl"] = settings.llm_base_url
    if not settings.llm_configured:
        llm["error"] = "no LLM is configured: set MIMIKIT_LLM_BASE_URL or MIMIKIT_LLM_API_KEY"
    report: dict[str, Any] = {"ok": False, "redis": {"ok": False, "url": _safe_url(settings)},
                              "workers": [], "queues": {}, "teller": {"state": "unknown"},
                              "llm": llm, "pendingQuestion": None}
    try:
        runtime.redis.ping()
    except RedisError as error:
        report["redis"]["error"] = f"{error}; start Redis or run `mimikit up`"
        return report
    from mimikit.llm_health import outage
    from mimikit.teller_gate import teller_state

    failing = outage(runtime)
    if failing:
        llm.update(error=failing["error"], failingSince=failing["since"])
    question = runtime.state.get_question()
    report.update(
        ok=True, workers=workers(runtime), queues=queue_depths(runtime),
        teller=teller_state(runtime), pendingQuestion=question.dump() if question else None,
    )
    report["redis"]["ok"] = True
    report["beat"] = beat_state(runtime)
    return report


def beat_state(runtime: Runtime) -> dict[str, Any]:
    """Whether a beat holds the RedBeat lock and ticked lately, and the last supervisor tick."""
    from mimikit.beat import liveness

    last_tick = runtime.redis.get(runtime.keys.meta("last_tick"))
    return {**liveness(runtime), "lastTick": last_tick.decode() if last_tick else None}


def _safe_url(settings: Any) -> str:
    url: str = settings.redis_url
    if "@" in url:
        scheme, rest = url.split("://", 1)
        url = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


@worker_ready.connect
def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    consumer = sender
    queues = sorted(q.name for q in consumer.task_consumer.queues) if consumer else []
    info = {"name": consumer.hostname if consumer else f"worker@{os.getpid()}",
            "queues": queues, "pid": os.getpid(),
            "concurrency": getattr(consumer.pool, "limit", None) if consumer else None,
            "startedAt": utcnow().isoformat()}
    _stop.clear()
    threading.Thread(target=_keep_registered, args=(info,), daemon=True,
                     name="mimikit-registration").start()


@worker_shutdown.connect
def _on_worker_shutdown(**_: Any) -> None:
    _stop.set()


def _keep_registered(info: dict[str, Any]) -> None:
    runtime = get_runtime()
    while True:
        try:
            register_worker(runtime, info)
        except RedisError as error:
            log.warning("cannot register worker %s: %s", info["name"], error)
        if _stop.wait(_REFRESH_SECONDS):
            break
    try:
        runtime.redis.delete(runtime.keys.worker(info["name"]))
    except RedisError as error:
        log.warning("cannot unregister worker %s: %s", info["name"], error)

"""The supervisor: code-only housekeeping that runs on every tick.

A tick re-queues tasks whose worker died, releases deferred tasks whose time came, evaluates the
file conditions and the triggers whose cooldown ended, expires the pending question, archives
memory when its thresholds are met, and wakes the Teller for pending inputs.
Overlapping ticks skip (a short Redis lock); with nothing to do a tick costs a few Redis reads.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from mimikit.conversation.gate import wake_for_pending
from mimikit.conversation.question import expire_question
from mimikit.models import utcnow
from mimikit.scheduling import triggers
from mimikit.scheduling.conditions import FileScanner
from mimikit.store import lease
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.supervisor import recovery
from mimikit.supervisor.archival import maybe_archive

log = logging.getLogger("mimikit.supervisor")


def tick(runtime: Runtime) -> dict[str, Any]:
    """One supervisor pass; returns what it did (for logs and tests)."""
    now = utcnow()
    redis, keys = runtime.redis, runtime.keys
    redis.set(keys.meta("last_tick"), now.isoformat())
    lock_key, token = keys.meta("tick_lock"), owner_token(uuid.uuid4().hex)
    seconds = int(max(runtime.settings.tick_seconds * 10, 10))
    if not lease.acquire(redis, lock_key, token, seconds, owner_alive):
        return {"skipped": "another tick is running"}
    try:
        done: dict[str, Any] = {}
        done["recovered"] = recovery.recover_lost(runtime, now)
        done["released"] = recovery.release_deferred(runtime, now)
        done["swept"] = recovery.sweep(runtime, now)
        done["fired"] = fire_watched(runtime, now)
        done["expired"] = expire_question(runtime)
        done["memory"] = maybe_archive(runtime)
        done["woke"] = wake_for_pending(runtime)
        return {k: v for k, v in done.items() if v}
    finally:
        lease.release(redis, lock_key, token)


def fire_watched(runtime: Runtime, now: Any) -> list[str]:
    """Evaluate the triggers with file conditions and those whose cooldown just ended."""
    redis, keys = runtime.redis, runtime.keys
    pipe = redis.pipeline(transaction=False)
    pipe.smembers(keys.file_triggers)
    pipe.zrangebyscore(keys.cooling, "-inf", now.timestamp())
    file_ids, cooled = pipe.execute()
    ids = sorted({as_text(i) for i in file_ids} | {as_text(i) for i in cooled})
    if not ids:
        return []
    if cooled:
        redis.zrem(keys.cooling, *cooled)
    files = FileScanner(runtime.settings.work_dir)
    fired = []
    for trigger in runtime.state.tasks_by_id(ids):
        if trigger.finished:
            triggers.unschedule(runtime, trigger)
            continue
        if triggers.evaluate_and_fire(runtime, trigger.id, cause="tick", trigger=trigger,
                                      files=files):
            fired.append(trigger.id)
    return fired

"""The supervisor: code-only housekeeping that runs on every tick.

A tick re-queues tasks whose worker died, releases deferred tasks whose time came, evaluates the
file conditions and the triggers whose cooldown ended, expires the pending question, archives
memory when its thresholds are met, wakes the Teller for pending inputs, and deletes a batch of
what is past the retention.
Each step stands alone: one that fails is logged and the others still run (a bad trigger is
skipped by itself, see ``triggers.guarded``). Overlapping ticks skip (a short Redis lock); with
nothing to do a tick costs a few Redis reads.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError

from mimikit.conversation.gate import wake_for_pending
from mimikit.conversation.question import expire_question
from mimikit.models import utcnow
from mimikit.scheduling import triggers
from mimikit.scheduling.conditions import FileScanner
from mimikit.store import lease
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.runtime import Runtime
from mimikit.supervisor import recovery, retention
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
        done = {name: _step(name, step, runtime, now) for name, step in STEPS}
        errors = [name for name, value in done.items() if value is _FAILED]
        done = {name: value for name, value in done.items() if value and value is not _FAILED}
        return {**done, "errors": errors} if errors else done
    finally:
        lease.release(redis, lock_key, token)


_FAILED = object()


def _step(name: str, step: Callable[[Runtime, datetime], Any], runtime: Runtime,
          now: datetime) -> Any:
    """Run one step; a failure is logged and the tick goes on (Redis away stops it)."""
    try:
        return step(runtime, now)
    except RedisError:
        raise
    except Exception:  # one broken step must not hold back the others
        log.exception("supervisor tick: step %r failed", name)
        return _FAILED


def fire_watched(runtime: Runtime, now: Any) -> list[str]:
    """Evaluate the triggers with file conditions and those whose cooldown just ended."""
    ids = sorted(set(runtime.triggers.watching("tick")) | set(runtime.triggers.take_cooled(now)))
    if not ids:
        return []
    files = FileScanner(runtime.settings.work_dir)
    fired = []
    for trigger in runtime.tasks.by_id(ids):
        if trigger.finished:
            triggers.unschedule(runtime, trigger)
            continue
        if triggers.evaluate(runtime, trigger.id, cause="tick", trigger=trigger, files=files):
            fired.append(trigger.id)
    return fired


STEPS: list[tuple[str, Callable[[Runtime, datetime], Any]]] = [
    ("recovered", recovery.recover_lost),
    ("released", recovery.release_deferred),
    ("swept", recovery.sweep),
    ("fired", fire_watched),
    ("expired", lambda runtime, _now: expire_question(runtime)),
    ("memory", lambda runtime, _now: maybe_archive(runtime)),
    ("woke", lambda runtime, _now: wake_for_pending(runtime)),
    ("pruned", retention.prune),
]

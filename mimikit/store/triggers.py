"""What the triggers of an instance are waiting on, in Redis.

A trigger is a task (``store.tasks``); here is what makes it findable cheaply: which triggers
wait on a task's result (``dependents``), which the tick looks at (files) or need an
``llm_eval`` verdict,
which cool down until when, the file fingerprints each last acted on, the verdicts, and which
triggers a batch is judging right now. Each is read by what it is keyed on, so the cost of a
routed result or a tick does not grow with the number of triggers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from redis import Redis

from mimikit.atoms.base import Watch
from mimikit.models import Task
from mimikit.store.keys import Keys, as_text


class TriggerStore:
    """The indexes, marks and verdicts of the triggers of one instance."""

    def __init__(self, redis: Redis, keys: Keys, load: Callable[[list[str]], list[Task]]
                 ) -> None:
        self.redis = redis
        self.keys = keys
        self.load = load  # tasks by id (``TaskStore.by_id``)

    def all(self) -> list[Task]:
        """Every trigger that is not finished (and some that just finished)."""
        return self.load(sorted(as_text(i) for i in self.redis.smembers(self.keys.triggers)))

    # --- what waits on what ----------------------------------------------------------------

    def index(self, trigger_id: str, refs: Iterable[str], watches: Iterable[Watch]) -> None:
        """Note that ``trigger_id`` waits on the tasks ``refs`` and on ``watches`` (idempotent)."""
        pipe = self.redis.pipeline(transaction=False)
        for ref in refs:
            pipe.sadd(self.keys.dependents(ref), trigger_id)
        kinds = set(watches)
        if "tick" in kinds:
            pipe.sadd(self.keys.file_triggers, trigger_id)
        if "llm" in kinds:
            pipe.sadd(self.keys.llm_triggers, trigger_id)
        pipe.execute()

    def forget(self, trigger_id: str, refs: Iterable[str], atom_paths: Iterable[str]) -> None:
        """Remove ``trigger_id`` from every index, its marks and its verdicts."""
        keys = self.keys
        pipe = self.redis.pipeline(transaction=False)
        for ref in refs:
            pipe.srem(keys.dependents(ref), trigger_id)
        for path in atom_paths:
            pipe.hdel(keys.verdicts, f"{trigger_id}:{path}")
        pipe.srem(keys.file_triggers, trigger_id)
        pipe.srem(keys.llm_triggers, trigger_id)
        pipe.zrem(keys.cooling, trigger_id)
        pipe.hdel(keys.evaluating, trigger_id)
        pipe.delete(keys.file_seen(trigger_id))
        pipe.execute()

    def dependents(self, task: Task) -> list[str]:
        """The ids of the triggers waiting on ``task`` or on the trigger that fired it."""
        pipe = self.redis.pipeline(transaction=False)
        for ref in (task.id, task.triggerId):
            if ref:
                pipe.smembers(self.keys.dependents(ref))
        return sorted({as_text(i) for members in pipe.execute() for i in members})

    def watching(self, kind: Watch) -> list[str]:
        """The ids of the triggers the tick looks at (``tick``) or that need verdicts (``llm``)."""
        key = self.keys.file_triggers if kind == "tick" else self.keys.llm_triggers
        return sorted(as_text(i) for i in self.redis.smembers(key))

    def unwatch(self, kind: Watch, trigger_id: str) -> None:
        key = self.keys.file_triggers if kind == "tick" else self.keys.llm_triggers
        self.redis.srem(key, trigger_id)

    # --- cooldowns -------------------------------------------------------------------------

    def cool_until(self, trigger_id: str, until: datetime) -> None:
        """Look at ``trigger_id`` again when its cooldown ends."""
        self.redis.zadd(self.keys.cooling, {trigger_id: until.timestamp()})

    def take_cooled(self, now: datetime) -> list[str]:
        """The triggers whose cooldown ended by ``now`` (each given out once)."""
        ids = self.redis.zrangebyscore(self.keys.cooling, "-inf", now.timestamp())
        if ids:
            self.redis.zrem(self.keys.cooling, *ids)
        return sorted(as_text(i) for i in ids)

    # --- file marks ------------------------------------------------------------------------

    def file_marks(self, trigger_id: str) -> dict[str, str]:
        """The fingerprint each file atom of ``trigger_id`` last acted on, by atom path."""
        raw = self.redis.hgetall(self.keys.file_seen(trigger_id))
        return {as_text(k): as_text(v) for k, v in raw.items()}

    def baseline(self, trigger_id: str, marks: dict[str, str]) -> None:
        """Note these fingerprints unless noted before (a restore keeps the old ones)."""
        key = self.keys.file_seen(trigger_id)
        pipe = self.redis.pipeline(transaction=False)
        for path, fingerprint in marks.items():
            pipe.hsetnx(key, path, fingerprint)
        pipe.execute()

    def queue_fired(self, pipe: Any, trigger_id: str, marks: dict[str, str]) -> None:
        """Queue, in a firing's transaction: its file marks noted, its cooldown mark dropped."""
        if marks:
            pipe.hset(self.keys.file_seen(trigger_id), mapping=marks)
        pipe.zrem(self.keys.cooling, trigger_id)

    # --- llm_eval verdicts -----------------------------------------------------------------

    def verdict(self, condition_id: str) -> dict[str, Any] | None:
        """The latest verdict on ``condition_id`` (``{satisfied, at, reason}``), if any."""
        raw = self.redis.hget(self.keys.verdicts, condition_id)
        return json.loads(raw) if raw else None

    def keep_verdicts(self, verdicts: dict[str, dict[str, Any]]) -> None:
        if verdicts:
            self.redis.hset(self.keys.verdicts,
                            mapping={k: json.dumps(v) for k, v in verdicts.items()})

    def judging(self) -> dict[str, float]:
        """The triggers a batch judges now, with until when (epoch seconds)."""
        return {as_text(k): float(v) for k, v in self.redis.hgetall(self.keys.evaluating).items()}

    def hold(self, trigger_ids: list[str], seconds: float) -> None:
        """Keep these triggers out of other batches for at most ``seconds``."""
        if trigger_ids:
            until = time.time() + seconds
            self.redis.hset(self.keys.evaluating, mapping=dict.fromkeys(trigger_ids, until))

    def release(self, trigger_ids: list[str]) -> None:
        if trigger_ids:
            self.redis.hdel(self.keys.evaluating, *trigger_ids)

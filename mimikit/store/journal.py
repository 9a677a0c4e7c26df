"""Run journals in Redis: the steps of a run, written before the next one starts (see
``llm.journal``), kept until the run's task ends (or the Teller's pass is acknowledged)."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from mimikit.store.keys import Keys

JOURNAL_TTL_SECONDS = 7 * 24 * 3600  # a journal its run never came back to


class RunJournal:
    """The journal of one run, under ``keys.journal(owner)``."""

    def __init__(self, redis: Redis, keys: Keys, owner: str) -> None:
        self.redis = redis
        self.key = keys.journal(owner)

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.redis.lrange(self.key, 0, -1)]

    def append(self, entry: dict[str, Any]) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.rpush(self.key, json.dumps(entry, ensure_ascii=False, default=str))
        pipe.expire(self.key, JOURNAL_TTL_SECONDS)
        pipe.execute()

    def clear(self) -> None:
        self.redis.delete(self.key)

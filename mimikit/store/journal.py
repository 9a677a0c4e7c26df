"""Run journals in Redis: the steps of a run, written before the next one starts (see
``llm.journal``), kept until the run's task ends (or the Teller's pass is acknowledged).

What a step records besides its entry (the call's usage, the step shown live) is queued with
``later`` and commits with the next entry, in the same round trip, or with ``flush`` when the
run ends.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from redis import Redis

from mimikit.store.keys import Keys

JOURNAL_TTL_SECONDS = 7 * 24 * 3600  # a journal its run never came back to


class RunJournal:
    """The journal of one run, under ``keys.journal(owner)``: read once, then kept in step
    with what it writes (a run is its journal's one writer)."""

    def __init__(self, redis: Redis, keys: Keys, owner: str) -> None:
        self.redis = redis
        self.key = keys.journal(owner)
        self._entries: list[dict[str, Any]] | None = None
        self._later: list[Callable[[Any], None]] = []

    def entries(self) -> list[dict[str, Any]]:
        if self._entries is None:
            self._entries = [json.loads(raw) for raw in self.redis.lrange(self.key, 0, -1)]
        return list(self._entries)

    def append(self, entry: dict[str, Any]) -> None:
        text = json.dumps(entry, ensure_ascii=False, default=str)
        pipe = self._queued()
        pipe.rpush(self.key, text)
        pipe.expire(self.key, JOURNAL_TTL_SECONDS)
        pipe.execute()
        if self._entries is not None:
            self._entries.append(json.loads(text))

    def later(self, write: Callable[[Any], None]) -> None:
        """Commit ``write`` (it queues commands on a transaction) with the next entry."""
        self._later.append(write)

    def flush(self) -> None:
        """Commit what ``later`` holds now."""
        if self._later:
            self._queued().execute()

    def _queued(self) -> Any:
        """A transaction holding what ``later`` was given."""
        pipe = self.redis.pipeline(transaction=True)
        writes, self._later = self._later, []
        for write in writes:
            write(pipe)
        return pipe

    def clear(self) -> None:
        self.redis.delete(self.key)
        self._entries = []

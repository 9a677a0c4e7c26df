"""The event log and live events of an instance, and the transactions that carry them.

Every change that must go together is written in one MULTI/EXEC (``transaction``), guarded by
WATCH on what it read; its log lines and live events are queued in the same transaction (see
``writepipe``), so a reader never sees a change without its event or an event without its
change. Log lines are mirrored to ``STATE_DIR/log.jsonl`` once the transaction committed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from redis import Redis
from redis.client import Pipeline

from mimikit.logfiles import SharedRotatingFileHandler
from mimikit.store.keys import Keys, as_text
from mimikit.store.retention import GRACE_SECONDS
from mimikit.store.writepipe import WritePipe, queue_event


class EventLog:
    """The log stream, the live-event stream and the transactions that write with them.

    Args:
        redis: The instance's Redis client.
        keys: Its key names.
        state_dir: Where ``log.jsonl`` is mirrored.
        retention_seconds: How long a finished task's records are kept.
    """

    def __init__(self, redis: Redis, keys: Keys, state_dir: Path, retention_seconds: int
                 ) -> None:
        self.redis = redis
        self.keys = keys
        self.log_path = Path(state_dir) / "log.jsonl"
        self.retention_seconds = retention_seconds
        self._log_file: SharedRotatingFileHandler | None = None

    def transaction(self, fn: Callable[[WritePipe], Any], *watch: str) -> Any:
        """Run ``fn`` under WATCH ``watch``; it reads, calls ``pipe.multi()``, then writes."""
        pending: list[str] = []

        def body(pipe: Pipeline) -> Any:
            pending.clear()
            writer = WritePipe(pipe, pending, self.retention_seconds + GRACE_SECONDS)
            value = fn(writer)
            writer.seal(self.keys)
            return value

        value = self.redis.transaction(body, *watch, value_from_callable=True)
        self._mirror(pending)
        return value

    def _mirror(self, lines: Iterable[str]) -> None:
        """Append log lines to ``log.jsonl`` (a copy of the Redis stream, rotated by size)."""
        lines = list(lines)
        if not lines:
            return
        if self._log_file is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = SharedRotatingFileHandler(self.log_path)
        self._log_file.write_lines(lines)

    def log(self, type_: str, **fields: Any) -> None:
        """Append one audit or task event to the log stream and ``log.jsonl``."""

        def write(pipe: WritePipe) -> None:
            pipe.multi()
            pipe.log(self.keys, type_, **fields)

        self.transaction(write)

    def publish(self, event: str, data: Any) -> None:
        """Publish a live event for the page (e.g. a reply's text as it streams)."""
        queue_event(self.redis, self.keys, event, data)

    def read(self, last_id: str = "$", block_ms: int = 15_000) -> list[tuple[str, str, str]]:
        """Live events after ``last_id`` as ``(id, event, data_json)``; blocks up to
        ``block_ms``."""
        reply = self.redis.xread({self.keys.events: last_id}, block=block_ms, count=100)
        out = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                out.append((as_text(entry_id), as_text(fields[b"event"]), as_text(fields[b"data"])))
        return out

    def recent(self, count: int = 100) -> list[dict[str, Any]]:
        """The newest ``count`` log events, oldest first."""
        entries = self.redis.xrevrange(self.keys.log, count=count)
        return [json.loads(fields[b"event"]) for _id, fields in reversed(entries)]

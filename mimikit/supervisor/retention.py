"""Retention on the supervisor tick: what is older than ``MIMIKIT_RETENTION_DAYS`` goes.

Each tick deletes a small batch of the finished tasks that are due (oldest first): their keys,
their ids in the status sets and the index, and their fingerprint when it still names them.
It also trims the log and live-event streams and the Teller's run transcripts by time, and the
spending indexes to what their entries keep. Each part costs a few Redis calls when nothing is
due. The conversation history and the memory files are kept.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from redis import Redis
from redis.exceptions import WatchError

from mimikit.models import Task, load
from mimikit.spending.book import KEEP_DAYS, LISTED_SCOPES
from mimikit.store import fingerprints as fingerprint
from mimikit.store import retention
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import mark_finished

PRUNE_BATCH = 500  # finished tasks deleted per tick at most
RUNS_TRIM_BATCH = 50  # Teller run transcripts looked at per tick at most
TELLER_RUNS_OWNER = "teller"  # the owner every Teller run is also kept under
_DELETE_IF_EQUAL = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def prune(runtime: Runtime, now: datetime) -> dict[str, int]:
    """The tick step: everything past the retention that is due now; returns what went."""
    cutoff = now.timestamp() - runtime.settings.retention_seconds
    done = {"tasks": prune_finished(runtime, cutoff),
            "teller_runs": trim_runs(runtime.redis, runtime.keys.runs(TELLER_RUNS_OWNER), cutoff)}
    trim_streams(runtime, cutoff)
    trim_usage_indexes(runtime, now.timestamp())
    return {name: count for name, count in done.items() if count}


def prune_finished(runtime: Runtime, cutoff: float, batch: int = PRUNE_BATCH) -> int:
    """Delete up to ``batch`` finished tasks that finished at ``cutoff`` or before."""
    redis, keys = runtime.redis, runtime.keys
    ids = retention.due(redis, keys, cutoff, batch)
    if not ids:
        return 0
    raws = redis.mget([keys.task(task_id) for task_id in ids])
    pipe = redis.pipeline(transaction=False)
    for task_id, raw in zip(ids, raws, strict=True):
        digest = _fingerprint(raw)
        if digest:
            pipe.eval(_DELETE_IF_EQUAL, 1, keys.fingerprint(digest), task_id)
    retention.forget(pipe, keys, ids)
    pipe.execute()
    return len(ids)


def _fingerprint(raw: bytes | None) -> str | None:
    """The fingerprint of a stored task (None when it is gone or unreadable)."""
    if not raw:
        return None
    try:
        return fingerprint.of(load(Task, raw))
    except (ValidationError, ValueError):
        return None


def trim_runs(redis: Redis, key: str, cutoff: float) -> int:
    """Drop the run transcripts at the head of list ``key`` that started before ``cutoff``."""
    first = redis.lindex(key, 0)
    if first is None or _started(first) >= cutoff:
        return 0

    def trim(pipe: Any) -> int:
        head = pipe.lrange(key, 0, RUNS_TRIM_BATCH - 1)
        old = 0
        while old < len(head) and _started(head[old]) < cutoff:
            old += 1
        pipe.multi()
        pipe.ltrim(key, old, -1)
        return old

    try:
        return int(redis.transaction(trim, key, value_from_callable=True))
    except WatchError:  # runs added meanwhile: the next tick trims
        return 0


def _started(raw: bytes | str) -> float:
    """When a kept run started (epoch seconds; 0 when it does not say)."""
    try:
        started = json.loads(raw).get("startedAt")
        return datetime.fromisoformat(started).timestamp() if started else 0.0
    except (ValueError, AttributeError, TypeError):
        return 0.0


def trim_streams(runtime: Runtime, cutoff: float) -> None:
    """Drop the log and live-event stream entries older than ``cutoff`` (whole blocks)."""
    min_id = f"{int(cutoff * 1000)}-0"
    pipe = runtime.redis.pipeline(transaction=False)
    for stream in (runtime.keys.log, runtime.keys.events):
        pipe.xtrim(stream, minid=min_id, approximate=True)
    pipe.execute()


def trim_usage_indexes(runtime: Runtime, now: float) -> None:
    """Drop the spending index entries whose totals have expired (their keep time passed)."""
    pipe = runtime.redis.pipeline(transaction=False)
    for scope in LISTED_SCOPES:
        pipe.zremrangebyscore(runtime.keys.usage_index(scope), "-inf",
                              f"({now - KEEP_DAYS[scope] * 86400}")
    pipe.execute()


def index_finished(runtime: Runtime, now: datetime, batch: int = 1000) -> int:
    """Bring the finished tasks written before retention existed under it: each goes into the
    index by when it finished, its records get their time to live, and the ids of tasks that
    are gone leave the status sets. Returns how many were indexed; the tick then deletes those
    past the retention, a batch at a time."""
    indexed = 0
    for status in ("done", "failed", "canceled"):
        ids: list[str] = []
        for member in runtime.redis.sscan_iter(runtime.keys.status(status), count=batch):
            ids.append(as_text(member))
            if len(ids) == batch:
                indexed += _index_batch(runtime, status, ids, now)
                ids = []
        indexed += _index_batch(runtime, status, ids, now)
    return indexed


def _index_batch(runtime: Runtime, status: str, ids: list[str], now: datetime) -> int:
    if not ids:
        return 0
    redis, keys = runtime.redis, runtime.keys
    keep = runtime.settings.retention_seconds + retention.GRACE_SECONDS
    pipe = redis.pipeline(transaction=False)
    indexed = 0
    for task_id, raw in zip(ids, redis.mget([keys.task(i) for i in ids]), strict=True):
        if raw is None:
            pipe.srem(keys.status(status), task_id)
            continue
        finished_at = _finished_at(raw)
        # At least the grace: the tick deletes those past the retention before they expire.
        ttl = max(int(finished_at + keep - now.timestamp()), retention.GRACE_SECONDS)
        mark_finished(pipe, keys, task_id, finished_at, ttl)
        indexed += 1
    pipe.execute()
    return indexed


def _finished_at(raw: bytes) -> float:
    """When a stored finished task finished (its creation when it does not say; epoch s)."""
    try:
        fields = json.loads(raw)
        when = fields.get("completedAt") or fields.get("createdAt")
        return datetime.fromisoformat(when).timestamp() if when else 0.0
    except (ValueError, AttributeError, TypeError):
        return 0.0


def expire_old_runs(runtime: Runtime, batch: int = 1000) -> int:
    """Give the run transcripts of Teller traces written before retention existed their time
    to live (those of tasks go with their task); returns how many. Reads the keyspace once."""
    found: list[bytes] = []
    expired = 0
    for key in runtime.redis.scan_iter(match=runtime.keys.runs("*"), count=batch):
        found.append(key)
        if len(found) == batch:
            expired += _expire_trace_runs(runtime, found)
            found = []
    return expired + _expire_trace_runs(runtime, found)


def _expire_trace_runs(runtime: Runtime, run_keys: list[bytes]) -> int:
    redis, keys = runtime.redis, runtime.keys
    owner_at = len(keys.runs(""))
    pipe = redis.pipeline(transaction=False)
    for key in run_keys:
        pipe.ttl(key)
        pipe.exists(keys.task(as_text(key)[owner_at:]))
    replies = pipe.execute()
    lasting = [key for key, ttl, of_task in zip(run_keys, replies[::2], replies[1::2],
                                                 strict=True) if ttl == -1 and not of_task]
    keep = runtime.settings.retention_seconds + retention.GRACE_SECONDS
    for key in lasting:
        pipe.expire(key, keep)
    pipe.execute()
    return len(lasting)

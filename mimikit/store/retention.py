"""Retention: a finished task and its records are kept ``MIMIKIT_RETENTION_DAYS``, then go.

The transaction that finishes a task also adds its id to the index of finished tasks (a sorted
set by completion time, which pages the finished tasks newest first) and sets a time to live on
its keys. The supervisor tick deletes what is due from that index in small batches, status sets
included (``supervisor.retention``); the time to live, a day longer, is the backstop for when no
tick runs. Active tasks and triggers are never in the index and their keys never expire.
"""

from __future__ import annotations

from typing import Any

from redis import Redis

from mimikit.exceptions import NotFound
from mimikit.models import FINISHED
from mimikit.store.keys import Keys, as_text

GRACE_SECONDS = 24 * 3600  # how much longer the time to live is than the retention
RUNS_KEPT = 500  # run transcripts kept per task or trace, the newest


def task_keys(keys: Keys, task_id: str) -> list[str]:
    """Every key that belongs to one task alone (those with a shorter life of their own too);
    ``writepipe.mark_finished`` gives the task's records their time to live."""
    return [*keys.task_records(task_id), keys.live_steps(task_id),
            keys.cancel_requested(task_id), keys.heartbeat(task_id)]


def due(redis: Redis, keys: Keys, cutoff: float, count: int) -> list[str]:
    """The ids of up to ``count`` tasks that finished at ``cutoff`` or before, oldest first."""
    ids = redis.zrangebyscore(keys.finished, "-inf", cutoff, start=0, num=count)
    return [as_text(i) for i in ids]


def forget(pipe: Any, keys: Keys, task_ids: list[str]) -> None:
    """Queue the deletion of these finished tasks: their keys, and their ids everywhere."""
    if not task_ids:
        return
    pipe.delete(*[key for task_id in task_ids for key in task_keys(keys, task_id)])
    for status in sorted(FINISHED):
        pipe.srem(keys.status(status), *task_ids)
    pipe.zrem(keys.finished, *task_ids)


def newest_finished(redis: Redis, keys: Keys, count: int, *, before: float | None = None,
                    after_id: str | None = None) -> list[str]:
    """The ids of up to ``count`` finished tasks, newest first.

    Args:
        redis: The client.
        keys: The instance's key names.
        count: How many ids at most.
        before: Only tasks that finished before this time (epoch seconds).
        after_id: Only tasks listed after this one (the last id of the previous page).

    Raises:
        NotFound: ``after_id`` is not a finished task that is still kept.
    """
    if after_id is not None:
        rank = redis.zrevrank(keys.finished, after_id)
        if rank is None:
            raise NotFound(f"no finished task with id {after_id!r} is kept (it may have "
                           "expired)")
        ids = redis.zrevrange(keys.finished, rank + 1, rank + count)
    elif before is not None:
        ids = redis.zrevrangebyscore(keys.finished, f"({before}", "-inf", start=0, num=count)
    else:
        ids = redis.zrevrange(keys.finished, 0, count - 1)
    return [as_text(i) for i in ids]

"""A Redis pipeline that also queues log and live events, so they commit with the change.

Log lines are remembered so the state store can mirror them to ``STATE_DIR/log.jsonl`` once
the transaction has committed; tasks that finish are put under retention when it ends (``seal``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from redis.client import Pipeline

from mimikit.models import FINISHED, LogEvent, Task, utcnow
from mimikit.store.keys import EVENTS_MAXLEN, LOG_MAXLEN, TASK_LOG_KEPT, Keys


class WritePipe:
    """A pipeline that can also queue log and live events, remembering lines to mirror."""

    def __init__(self, pipe: Pipeline, pending: list[str], expire_seconds: int | None = None
                 ) -> None:
        self._pipe = pipe
        self._pending = pending
        self._expire_seconds = expire_seconds
        self._finished: list[Task] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)

    def put_task(self, keys: Keys, task: Task, previous_status: str | None) -> None:
        self._pipe.set(keys.task(task.id), task.model_dump_json(exclude_none=True))
        if previous_status and previous_status != task.status:
            self._pipe.srem(keys.status(previous_status), task.id)
        self._pipe.sadd(keys.status(task.status), task.id)
        if task.is_trigger and task.status in FINISHED:
            self._pipe.srem(keys.triggers, task.id)
        if task.status in FINISHED and previous_status != task.status and not task.is_trigger:
            self._pipe.hincrby(keys.counters, f"tasks|{task.role}|{task.status}", 1)
        if task.status in FINISHED and previous_status not in FINISHED:
            self._finished.append(task)
            self._pipe.delete(keys.journal(task.id))  # its run will not resume
        if task.waitingSince is not None and task.status not in FINISHED:
            self._pipe.zadd(keys.waiting_for_model, {task.id: task.waitingSince.timestamp()})
        elif previous_status is not None:
            self._pipe.zrem(keys.waiting_for_model, task.id)

    def seal(self, keys: Keys) -> None:
        """Put the tasks that finished in this transaction under retention; called last, so
        the time to live covers every key the transaction wrote (a result set after the task)."""
        if self._expire_seconds is None:
            return
        for task in self._finished:
            finished_at = (task.completedAt or utcnow()).timestamp()
            mark_finished(self._pipe, keys, task.id, finished_at, self._expire_seconds)
        self._finished.clear()

    def log(self, keys: Keys, type_: str, **fields: Any) -> None:
        event = LogEvent(type=type_, **{k: v for k, v in fields.items() if v is not None})
        line = event.model_dump_json(exclude_none=True)
        self._pipe.xadd(keys.log, {"event": line}, maxlen=LOG_MAXLEN, approximate=True)
        if event.taskId:
            self._pipe.rpush(keys.task_log(event.taskId), line)
            self._pipe.ltrim(keys.task_log(event.taskId), -TASK_LOG_KEPT, -1)
        self._pending.append(line)

    def event(self, keys: Keys, event: str, data: Any) -> None:
        queue_event(self._pipe, keys, event, data)


def mark_finished(pipe: Any, keys: Keys, task_id: str, finished_at: float,
                  ttl_seconds: int) -> None:
    """Queue the writes that put a finished task under retention: its id into the index of
    finished tasks, a time to live on its records."""
    pipe.zadd(keys.finished, {task_id: finished_at})
    for key in keys.task_records(task_id):
        pipe.expire(key, ttl_seconds)


def queue_event(target: Any, keys: Keys, event: str, data: Any) -> None:
    """Queue one live event (``message``, ``task``, ``question``, ``status``) on ``target``."""
    payload = json.dumps(data, default=str)
    target.xadd(keys.events, {"event": event, "data": payload},
                maxlen=EVENTS_MAXLEN, approximate=True)


class Transactions(Protocol):
    """What the stores write through (``eventlog.EventLog``): transactions that carry their log
    lines and live events, and single log events."""

    retention_seconds: int

    def transaction(self, fn: Callable[[WritePipe], Any], *watch: str) -> Any:
        """Run ``fn`` under WATCH ``watch``; it reads, calls ``pipe.multi()``, then writes."""

    def log(self, type_: str, **fields: Any) -> None:
        """Append one event to the log."""

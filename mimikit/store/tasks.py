"""Tasks and their results in Redis: stored, claimed by one delivery, finished exactly once.

A task's status moves only along ``ALLOWED``; a finished task never moves again. Each change is
one transaction guarded by WATCH on the task (and on what else it read), carrying its log line
and the live ``task`` event of the page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

from redis import Redis

from mimikit.exceptions import InvalidTransition, NotFound
from mimikit.models import FINISHED, Result, Task, load, utcnow
from mimikit.store.keys import Keys, as_text
from mimikit.store.writepipe import Transactions, WritePipe

ALLOWED: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "canceled", "deferred", "failed", "done"}),
    "deferred": frozenset({"queued", "running", "canceled", "failed"}),
    "running": frozenset({"done", "failed", "canceled", "queued", "deferred"}),
    "done": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),
}
CANCEL_TTL_SECONDS = 7 * 24 * 3600
# KEYS: heartbeat, cancel request; ARGV: owner, lifetime (ms) -> {ours, cancel asked}
_BEAT_SCRIPT = """
local holder = redis.call('GET', KEYS[1])
local ours = 0
if (not holder) or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  ours = 1
end
return {ours, redis.call('EXISTS', KEYS[2])}
"""
Describe = Callable[[Task], dict[str, Any]]


def check_transition(task: Task, to_status: str) -> None:
    """Raise ``InvalidTransition`` unless ``task`` may move to ``to_status``."""
    if to_status not in ALLOWED[task.status]:
        raise InvalidTransition(
            f"task {task.id} is {task.status}; it cannot become {to_status}"
            + (" (finished tasks never change again)" if task.status in FINISHED else "")
        )


@dataclass
class StartDecision:
    """What ``TaskStore.start`` decided for one delivery of a task."""

    outcome: Literal["started", "finished", "canceled", "busy", "deferred", "missing"]
    task: Task | None = None
    detail: str = ""


class TaskStore:
    """The tasks (oneshots and triggers) and results of one instance.

    Args:
        redis: The instance's Redis client.
        keys: Its key names.
        events: The event log its changes are written with.
        describe: What the page is sent of a task when it changes (its summary).
        heartbeat_seconds: How long a running task's heartbeat lasts without renewal.
    """

    def __init__(self, redis: Redis, keys: Keys, events: Transactions, describe: Describe,
                 heartbeat_seconds: float) -> None:
        self.redis = redis
        self.keys = keys
        self.events = events
        self.describe = describe
        self.heartbeat_seconds = heartbeat_seconds

    # --- reading ---------------------------------------------------------------------------

    def get(self, task_id: str) -> Task | None:
        raw = self.redis.get(self.keys.task(task_id))
        return load(Task, raw) if raw else None

    def require(self, task_id: str) -> Task:
        task = self.get(task_id)
        if task is None:
            raise NotFound(f"no task with id {task_id!r}; list tasks with `mimikit tasks`")
        return task

    def with_status(self, *statuses: str) -> list[Task]:
        ids: set[bytes] = set()
        for status in statuses:
            ids |= self.redis.smembers(self.keys.status(status))
        return self.by_id(sorted(as_text(i) for i in ids))

    def by_id(self, ids: list[str]) -> list[Task]:
        """The tasks with these ids, in one round trip (missing ones left out)."""
        if not ids:
            return []
        raws = self.redis.mget([self.keys.task(i) for i in ids])
        return [load(Task, raw) for raw in raws if raw]

    def result(self, task_id: str) -> Result | None:
        raw = self.redis.get(self.keys.result(task_id))
        return load(Result, raw) if raw else None

    def results_by_id(self, ids: list[str]) -> dict[str, Result]:
        """The results of these tasks, in one round trip (tasks without one left out)."""
        raws = self.redis.mget([self.keys.result(i) for i in ids]) if ids else []
        return {task_id: load(Result, raw) for task_id, raw in zip(ids, raws, strict=True) if raw}

    def waiting_for_model(self) -> dict[str, Any] | None:
        """``{count, since}``: how many unfinished tasks wait for the LLM to come back, and
        since when the first of them has; None when none does."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(self.keys.waiting_for_model)
        pipe.zrange(self.keys.waiting_for_model, 0, 0, withscores=True)
        count, first = pipe.execute()
        if not count:
            return None
        since = datetime.fromtimestamp(first[0][1], UTC).isoformat() if first else None
        return {"count": int(count), "since": since}

    def log_of(self, task_id: str) -> list[dict[str, Any]]:
        """The log events of one task, oldest first."""
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.task_log(task_id), 0, -1)]

    # --- writing ---------------------------------------------------------------------------

    def add(self, tasks: list[Task], note: str | None = None) -> list[Task]:
        """Store new tasks (and triggers) together, in one transaction."""

        def write(pipe: WritePipe) -> list[Task]:
            pipe.multi()
            self.queue_new(pipe, tasks, note)
            return tasks

        return self.events.transaction(write)

    def queue_new(self, pipe: WritePipe, tasks: list[Task], note: str | None = None) -> None:
        """Queue the writes that store ``tasks`` into an open transaction."""
        for task in tasks:
            pipe.put_task(self.keys, task, None)
            if task.is_trigger:
                pipe.sadd(self.keys.triggers, task.id)
            pipe.log(self.keys, "task_created", taskId=task.id, traceId=task.traceId,
                     taskType=task.type, role=task.role, parentId=task.parentId, note=note)
            pipe.event(self.keys, "task", self.describe(task))

    def update(self, task_id: str, change: Callable[[Task], Task | None],
               also: Callable[[WritePipe, Task, Task], None] | None = None,
               watch: tuple[str, ...] = ()) -> Task | None:
        """Apply ``change`` to a task atomically; ``None`` from ``change`` means no write.

        ``also(pipe, before, after)`` may queue further writes in the same transaction;
        ``watch`` names other keys that ``change`` reads (a write to them meanwhile retries).
        """
        key = self.keys.task(task_id)

        def write(pipe: WritePipe) -> Task | None:
            raw = pipe.get(key)
            if raw is None:
                raise NotFound(f"no task with id {task_id!r}")
            before = load(Task, raw)
            after = change(before.model_copy(deep=True))
            if after is None:
                return None
            pipe.multi()
            pipe.put_task(self.keys, after, before.status)
            if also:
                also(pipe, before, after)
            pipe.event(self.keys, "task", self.describe(after))
            return after

        return self.events.transaction(write, key, *watch)

    def set_status(self, task_id: str, status: str, *, reason: str | None = None,
                   also: Callable[[WritePipe, Task], None] | None = None,
                   **fields: Any) -> Task | None:
        """Move a task to ``status`` if allowed; returns the new task, or None if finished.

        ``also(pipe, task)`` may queue further writes in the same transaction.
        """

        def change(task: Task) -> Task | None:
            if task.finished:
                return None
            check_transition(task, status)
            task.status = status  # type: ignore[assignment]
            for name, value in fields.items():
                setattr(task, name, value)
            if status in FINISHED:
                task.completedAt = utcnow()
                task.error = reason if status != "done" else None
            return task

        def note(pipe: WritePipe, before: Task, after: Task) -> None:
            pipe.log(self.keys, f"task_{status}", taskId=after.id, traceId=after.traceId,
                     reason=reason, attempts=after.attempts)
            if status != "running":
                pipe.delete(self.keys.heartbeat(after.id))
            if also:
                also(pipe, after)

        return self.update(task_id, change, note)

    def start(self, task_id: str, owner: str, celery_id: str | None,
              is_owner_alive: Callable[[str], bool]) -> StartDecision:
        """Claim one delivery of a task.

        Refused: a finished task, one deferred until later, and one whose heartbeat is held by
        another live delivery (whatever its status says). A task whose cancel was recorded while
        no delivery ran it is not started either (``canceled``: the caller records the cancel).
        """
        decision = StartDecision("missing")
        hb_key = self.keys.heartbeat(task_id)

        def change(task: Task) -> Task | None:
            decision.task = task
            if task.finished:
                decision.outcome, decision.detail = "finished", task.status
                return None
            if self.cancel_requested(task_id):
                decision.outcome = "canceled"
                return None
            if task.deferUntil and task.deferUntil > utcnow():
                decision.outcome, decision.detail = "deferred", task.deferUntil.isoformat()
                return None
            holder = as_text(self.redis.get(hb_key) or b"")
            if holder and holder != owner and is_owner_alive(holder):
                decision.outcome, decision.detail = "busy", holder
                return None
            task.status, task.startedAt, task.celeryId = "running", utcnow(), celery_id
            task.attempts += 1
            decision.outcome = "started"
            return task

        def claim(pipe: WritePipe, before: Task, after: Task) -> None:
            pipe.set(hb_key, owner, px=self._heartbeat_ms)
            pipe.log(self.keys, "task_started", taskId=after.id, traceId=after.traceId,
                     attempts=after.attempts, celeryId=celery_id, owner=owner)

        changed = self.update(task_id, change, claim)
        if changed is not None:
            decision.task = changed
        return decision

    @property
    def _heartbeat_ms(self) -> int:
        return int(self.heartbeat_seconds * 1000)

    def beat(self, task_id: str, owner: str) -> tuple[bool, bool]:
        """Renew the heartbeat of a running task, in one round trip (each run in flight beats
        every second): ``(ours, cancel)``, ``ours`` False when someone else holds it now,
        ``cancel`` True when a cancel of the task was asked for."""
        ours, cancel = self._beat(keys=[self.keys.heartbeat(task_id),
                                        self.keys.cancel_requested(task_id)],
                                  args=[owner, self._heartbeat_ms])
        return bool(ours), bool(cancel)

    @cached_property
    def _beat(self) -> Any:
        return self.redis.register_script(_BEAT_SCRIPT)

    def complete(self, result: Result, *, also: Callable[[WritePipe, Task], None] | None = None,
                 only_if_lost: bool = False) -> Task | None:
        """Write ``result`` and finish its task in one transaction.

        Returns the finished task, or None when the task had already finished (a second
        delivery), in which case nothing is written. With ``only_if_lost`` (recovery failing a
        task whose worker died) nothing is written either when a delivery holds its heartbeat
        now: a redelivery that just started is never failed.
        """
        status = "done" if result.status in ("done", "needs_input") else "failed"
        hb_key = self.keys.heartbeat(result.id)

        def change(task: Task) -> Task | None:
            if task.finished:
                return None
            if only_if_lost and (task.status != "running" or self.redis.exists(hb_key)):
                return None
            task.status, task.completedAt = status, result.completedAt  # type: ignore[assignment]
            task.error = result.error if status == "failed" else None
            task.outcome, task.waitingSince = result.status, None
            return task

        def write(pipe: WritePipe, before: Task, after: Task) -> None:
            body = result.model_dump_json(exclude_none=True)
            pipe.set(self.keys.result(after.id), body)
            if after.triggerId:
                # A fired task's result is also its trigger's latest result, so conditions on
                # the trigger id (task_done of B, B a conditional trigger) see it.
                pipe.set(self.keys.result(after.triggerId), body)
            pipe.delete(self.keys.heartbeat(after.id))
            pipe.log(self.keys, f"task_{result.status}", taskId=after.id, traceId=after.traceId,
                     attempts=after.attempts, error=result.error)
            if also:
                also(pipe, after)

        return self.update(result.id, change, write, watch=(hb_key,) if only_if_lost else ())

    def request_cancel(self, task_id: str, reason: str = "canceled") -> Task | None:
        """Record that ``task_id`` is to be canceled, and why (a running delivery stops at its
        next check; the request survives worker restarts). Returns the task as it is now, or
        None when it had already finished (nothing is recorded then)."""
        task = self.require(task_id)
        if task.finished:
            return None
        self.redis.set(self.keys.cancel_requested(task_id), reason, ex=CANCEL_TTL_SECONDS)
        if task.status == "running":
            self.events.log("task_cancel_requested", taskId=task_id, traceId=task.traceId)
        return self.get(task_id)

    def cancel_requested(self, task_id: str) -> bool:
        return bool(self.redis.exists(self.keys.cancel_requested(task_id)))

    def cancel_reason(self, task_id: str) -> str | None:
        """Why a cancel was asked for (``canceled by the user``), or None when none was."""
        raw = self.redis.get(self.keys.cancel_requested(task_id))
        return as_text(raw) if raw else None

    def finish_canceled(self, task_id: str, reason: str = "canceled while running",
                        also: Callable[[WritePipe, Task], None] | None = None) -> Task | None:
        """Record that a running task stopped because it was canceled."""
        return self.set_status(task_id, "canceled", reason=reason, also=also)

"""The Redis state store: tasks, results, triggers, inbox, history, question, event log.

Changes that must go together are written in one MULTI/EXEC, guarded by WATCH on the task
they depend on, so a reader never sees half of a change and a finished task never moves again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from redis import Redis
from redis.client import Pipeline

from mimikit.exceptions import InvalidTransition, NotFound
from mimikit.logfiles import SharedRotatingFileHandler
from mimikit.models import FINISHED, Result, Task, load, utcnow
from mimikit.store.conversation import ConversationStore
from mimikit.store.keys import Keys, as_text
from mimikit.store.retention import GRACE_SECONDS
from mimikit.store.runs import Runs
from mimikit.store.writepipe import WritePipe, queue_event

log = logging.getLogger("mimikit.state")

ALLOWED: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "canceled", "deferred", "failed", "done"}),
    "deferred": frozenset({"queued", "running", "canceled", "failed"}),
    "running": frozenset({"done", "failed", "canceled", "queued", "deferred"}),
    "done": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),
}
CANCEL_TTL_SECONDS = 7 * 24 * 3600


def check_transition(task: Task, to_status: str) -> None:
    """Raise ``InvalidTransition`` unless ``task`` may move to ``to_status``."""
    if to_status not in ALLOWED[task.status]:
        raise InvalidTransition(
            f"task {task.id} is {task.status}; it cannot become {to_status}"
            + (" (finished tasks never change again)" if task.status in FINISHED else "")
        )


@dataclass
class StartDecision:
    """What ``start_task`` decided for one delivery of a task."""

    outcome: Literal["started", "finished", "busy", "deferred", "missing"]
    task: Task | None = None
    detail: str = ""


class StateStore(ConversationStore, Runs):
    """All runtime state of one instance, in Redis under ``keys.prefix``."""

    def __init__(self, redis: Redis, keys: Keys, state_dir: Path) -> None:
        self.redis = redis
        self.keys = keys
        self.state_dir = Path(state_dir)
        self.log_path = self.state_dir / "log.jsonl"
        self._log_file: SharedRotatingFileHandler | None = None

    # --- low level --------------------------------------------------------------------------

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
        """Append log lines to ``STATE_DIR/log.jsonl`` (a copy of the Redis stream, rotated by
        size)."""
        lines = list(lines)
        if not lines:
            return
        if self._log_file is None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
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

    def read_events(self, last_id: str = "$", block_ms: int = 15_000) -> list[tuple[str, str, str]]:
        """Events after ``last_id`` as ``(id, event, data_json)``; blocks up to ``block_ms``."""
        reply = self.redis.xread({self.keys.events: last_id}, block=block_ms, count=100)
        out = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                out.append((as_text(entry_id), as_text(fields[b"event"]), as_text(fields[b"data"])))
        return out

    def recent_log(self, count: int = 100) -> list[dict[str, Any]]:
        entries = self.redis.xrevrange(self.keys.log, count=count)
        return [json.loads(fields[b"event"]) for _id, fields in reversed(entries)]

    # --- tasks ------------------------------------------------------------------------------

    def get_task(self, task_id: str) -> Task | None:
        raw = self.redis.get(self.keys.task(task_id))
        return load(Task, raw) if raw else None

    def require_task(self, task_id: str) -> Task:
        task = self.get_task(task_id)
        if task is None:
            raise NotFound(f"no task with id {task_id!r}; list tasks with `mimikit tasks`")
        return task

    def tasks_with_status(self, *statuses: str) -> list[Task]:
        ids: set[bytes] = set()
        for status in statuses:
            ids |= self.redis.smembers(self.keys.status(status))
        return self._load_tasks(sorted(as_text(i) for i in ids))

    def triggers(self) -> list[Task]:
        return self._load_tasks(sorted(as_text(i) for i in self.redis.smembers(self.keys.triggers)))

    def tasks_by_id(self, ids: list[str]) -> list[Task]:
        """The tasks with these ids, in one round trip (missing ones left out)."""
        return self._load_tasks(ids)

    def _load_tasks(self, ids: list[str]) -> list[Task]:
        if not ids:
            return []
        raws = self.redis.mget([self.keys.task(i) for i in ids])
        return [load(Task, raw) for raw in raws if raw]

    def add_tasks(self, tasks: list[Task], note: str | None = None) -> list[Task]:
        """Store new tasks (and triggers) together, in one transaction."""

        def write(pipe: WritePipe) -> list[Task]:
            pipe.multi()
            self.queue_new_tasks(pipe, tasks, note)
            return tasks

        return self.transaction(write)

    def queue_new_tasks(self, pipe: WritePipe, tasks: list[Task], note: str | None = None
                        ) -> None:
        """Queue the writes that store ``tasks`` into an open transaction."""
        for task in tasks:
            pipe.put_task(self.keys, task, None)
            if task.is_trigger:
                pipe.sadd(self.keys.triggers, task.id)
            pipe.log(self.keys, "task_created", taskId=task.id, traceId=task.traceId,
                     taskType=task.type, role=task.role, parentId=task.parentId, note=note)
            pipe.event(self.keys, "task", summarize(task))

    def update_task(self, task_id: str, change: Callable[[Task], Task | None],
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
            pipe.event(self.keys, "task", summarize(after))
            return after

        return self.transaction(write, key, *watch)

    def set_status(self, task_id: str, status: str, *, reason: str | None = None,
                   **fields: Any) -> Task | None:
        """Move a task to ``status`` if allowed; returns the new task, or None if finished."""

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

        return self.update_task(task_id, change, note)

    def start_task(self, task_id: str, owner: str, celery_id: str | None,
                   is_owner_alive: Callable[[str], bool]) -> StartDecision:
        """Claim one delivery of a task.

        Refused: a finished task, one deferred until later, and one whose heartbeat is held by
        another live delivery (whatever its status says). A task whose cancel was recorded while
        no worker ran it becomes ``canceled`` here instead of starting.
        """
        decision = StartDecision("missing")
        hb_key = self.keys.heartbeat(task_id)

        def change(task: Task) -> Task | None:
            decision.task = task
            if task.finished:
                decision.outcome, decision.detail = "finished", task.status
                return None
            if self.cancel_requested(task_id):
                decision.outcome, decision.detail = "finished", "canceled"
                task.status, task.completedAt, task.error = "canceled", utcnow(), "canceled"
                return task
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
            if decision.outcome != "started":
                pipe.log(self.keys, "task_canceled", taskId=after.id, traceId=after.traceId,
                         reason="canceled before this delivery started")
                return
            pipe.set(hb_key, owner, px=self._heartbeat_ms)
            pipe.log(self.keys, "task_started", taskId=after.id, traceId=after.traceId,
                     attempts=after.attempts, celeryId=celery_id, owner=owner)

        changed = self.update_task(task_id, change, claim)
        if changed is not None:
            decision.task = changed
        return decision

    heartbeat_seconds: float = 10.0
    retention_seconds: int = 30 * 24 * 3600  # finished tasks are kept this long (see retention)

    @property
    def _heartbeat_ms(self) -> int:
        return int(self.heartbeat_seconds * 1000)

    def beat(self, task_id: str, owner: str) -> bool:
        """Renew the heartbeat of a running task; False when someone else owns it now."""
        key = self.keys.heartbeat(task_id)
        holder = self.redis.get(key)
        if holder is not None and as_text(holder) != owner:
            return False
        self.redis.set(key, owner, px=self._heartbeat_ms)
        return True

    def complete_task(self, result: Result, *, notify_teller: bool = True,
                      also: Callable[[WritePipe, Task], None] | None = None,
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
            if notify_teller:
                item = {"kind": "result", "taskId": after.id, "role": after.role,
                        "status": result.status, "traceId": after.traceId}
                pipe.rpush(self.keys.inbox, json.dumps(item))
            if also:
                also(pipe, after)

        return self.update_task(result.id, change, write, watch=(hb_key,) if only_if_lost else ())

    def request_cancel(self, task_id: str, reason: str = "canceled") -> Task | None:
        """Cancel a task: queued tasks and triggers at once, running ones at their next check.

        The request is recorded in Redis, so it survives worker restarts. Returns the task as
        it is now, or None when it had already finished.
        """
        task = self.require_task(task_id)
        if task.finished:
            return None
        self.redis.set(self.keys.cancel_requested(task_id), reason, ex=CANCEL_TTL_SECONDS)
        if task.status == "running":
            self.log("task_cancel_requested", taskId=task_id, traceId=task.traceId)
            return task
        return self.set_status(task_id, "canceled", reason=reason) or self.get_task(task_id)

    def cancel_requested(self, task_id: str) -> bool:
        return bool(self.redis.exists(self.keys.cancel_requested(task_id)))

    def finish_canceled(self, task_id: str) -> Task | None:
        """Record that a running task stopped because it was canceled."""
        return self.set_status(task_id, "canceled", reason="canceled while running")

    def get_result(self, task_id: str) -> Result | None:
        raw = self.redis.get(self.keys.result(task_id))
        return load(Result, raw) if raw else None

    def results_by_id(self, ids: list[str]) -> dict[str, Result]:
        """The results of these tasks, in one round trip (tasks without one left out)."""
        raws = self.redis.mget([self.keys.result(i) for i in ids]) if ids else []
        return {task_id: load(Result, raw) for task_id, raw in zip(ids, raws, strict=True) if raw}

    def task_log(self, task_id: str) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.task_log(task_id), 0, -1)]

    # --- misc ---------------------------------------------------------------------------------

    def claim(self, name: str, ttl_seconds: int | None = None) -> bool:
        """True the first time ``name`` is claimed cluster-wide (SET NX)."""
        return bool(self.redis.set(self.keys.claim(name), "1", nx=True, ex=ttl_seconds))


def summarize(task: Task) -> dict[str, Any]:
    """The TaskSummary of the API and ``list_tasks`` (prompt cut to 100 characters)."""
    status: str = task.status
    if task.is_trigger and not task.finished:
        status = "paused" if task.paused else "trigger"
    summary: dict[str, Any] = {
        "id": task.id, "type": task.type, "role": task.role, "title": task.title,
        "prompt": task.prompt[:100], "priority": task.priority, "status": status,
        "createdAt": task.createdAt.isoformat(), "attempts": task.attempts,
    }
    schedule = task.schedule
    next_run = getattr(schedule, "nextRunAt", None) or getattr(schedule, "runAt", None)
    if next_run:
        summary["nextRunAt"] = next_run.isoformat()
    if task.catchUp:
        summary["catchUp"] = True
    summary.update(triggerId=task.triggerId, pausedReason=task.pausedReason if task.paused else None,
                   error=task.error[:300] if task.error else None,
                   completedAt=task.completedAt.isoformat() if task.completedAt else None)
    return {k: v for k, v in summary.items() if v is not None}


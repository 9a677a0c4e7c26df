"""Recovery: tasks whose worker died, deferred retries, and what to redo after a restart.

A running task keeps a heartbeat key alive; when the key has stayed away ``heartbeat_seconds``
(not only expired: a Redis restart drops live heartbeats too, until they are renewed) its worker
is gone. The task is then re-queued after an exponential backoff (through ``deferUntil``, status
``deferred``) while ``attempts < retry.maxAttempts`` (``MIMIKIT_RETRY_MAX_ATTEMPTS``, 3, when the
task sets none), else it fails with the reason, which routes like any failure.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial
from importlib import metadata
from typing import Any

from mimikit.conversation.gate import wake_for_pending
from mimikit.conversation.question import expire_question
from mimikit.delivery.dispatch import enqueue, queue_depths
from mimikit.delivery.retry import may_retry, next_attempt_at
from mimikit.lifecycle.event import Completion
from mimikit.lifecycle.pipeline import finish
from mimikit.lifecycle.routing import retire_spent
from mimikit.models import Result, Task, utcnow
from mimikit.scheduling import triggers
from mimikit.scheduling.entries import entry_exists
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.recovery")
LOST_REASON = "worker lost (heartbeat expired)"
SWEEP_SECONDS = 60
STRANDED_SECONDS = 60


def recover_lost(runtime: Runtime, now: datetime) -> list[str]:
    """Re-queue or fail every running task whose heartbeat stayed away; returns their ids.

    A missing heartbeat is first only suspected: after a Redis restart or a network cut the
    heartbeats of live deliveries are gone too, until they renew them (within a second or so).
    Only a heartbeat still missing ``heartbeat_seconds`` after it was first missed counts.
    """
    redis, keys = runtime.redis, runtime.keys
    ids = sorted(as_text(i) for i in redis.smembers(keys.status("running")))
    suspects_key = keys.meta("heartbeat_missed")
    pipe = redis.pipeline(transaction=False)
    for task_id in ids:
        pipe.exists(keys.heartbeat(task_id))
    pipe.hgetall(suspects_key)
    *alive, raw_suspects = pipe.execute()
    suspects = {as_text(k): float(v) for k, v in raw_suspects.items()}
    missing = {task_id for task_id, beating in zip(ids, alive, strict=True) if not beating}
    cleared = [task_id for task_id in suspects if task_id not in missing]
    new = {task_id: now.timestamp() for task_id in missing if task_id not in suspects}
    if cleared:
        redis.hdel(suspects_key, *cleared)
    if new:
        redis.hset(suspects_key, mapping=new)
    grace = runtime.settings.heartbeat_seconds
    lost = sorted(task_id for task_id, since in suspects.items()
                  if task_id in missing and now.timestamp() - since >= grace)
    return [task_id for task_id in lost if handle_lost(runtime, task_id, now)]


def handle_lost(runtime: Runtime, task_id: str, now: datetime) -> bool:
    """Re-queue (after a backoff) or fail one running task found without a heartbeat; both
    re-check the heartbeat in their transaction. True when it did either."""
    task = runtime.tasks.get(task_id)
    if task is None or task.status != "running":
        return False
    reason = runtime.tasks.cancel_reason(task_id)
    if reason is not None:
        return finish(runtime, Completion(task=task, canceled=reason)) is not None
    if may_retry(task, runtime.settings.retry_max_attempts):
        return _defer(runtime, task_id, next_attempt_at(task, now))
    result = Result(id=task_id, status="failed", error=LOST_REASON, attempts=task.attempts,
                    traceId=task.traceId)
    if finish(runtime, Completion(task=task, result=result, lost=True)) is None:
        return False
    log.warning("task %s failed: %s after %d attempts", task_id, LOST_REASON, task.attempts)
    return True


def _defer(runtime: Runtime, task_id: str, until: datetime) -> bool:
    hb_key = runtime.keys.heartbeat(task_id)

    def change(task: Task) -> Task | None:
        if task.status != "running" or runtime.redis.exists(hb_key):
            return None
        task.status, task.deferUntil = "deferred", until
        task.error = LOST_REASON
        return task

    def note(pipe: Any, before: Task, after: Task) -> None:
        pipe.log(runtime.keys, "task_retry_scheduled", taskId=task_id, traceId=after.traceId,
                 attempts=after.attempts, deferUntil=until.isoformat(), reason=LOST_REASON)

    return runtime.tasks.update(task_id, change, note, watch=(hb_key,)) is not None


def release_deferred(runtime: Runtime, now: datetime) -> list[str]:
    """Queue and enqueue the deferred tasks whose ``deferUntil`` has passed."""
    ids = sorted(as_text(i) for i in runtime.redis.smembers(runtime.keys.status("deferred")))
    released = []
    for task_id in ids:
        task = runtime.tasks.get(task_id)
        if task is None or (task.deferUntil and task.deferUntil > now):
            continue

        def change(current: Task) -> Task | None:
            if current.status != "deferred":
                return None
            current.status = "queued"
            return current

        queued = runtime.tasks.update(task_id, change)
        if queued is not None:
            enqueue(runtime, queued)
            released.append(task_id)
    return released


def recover_on_startup(runtime: Runtime) -> dict[str, Any]:
    """Redo what a crash may have left half done (run once when a beat starts).

    Queued tasks are sent again (a duplicate delivery does nothing), timed triggers get their
    beat entries back, conditional triggers their indexes, a question that expired while it
    was down is resolved, and pending inputs wake the Teller. An instance that starts with
    state says so in the chat: its version and what it recovered. When it is done it notes
    the time, which ``mimikit up`` waits for before it says "ready".
    """
    queued = [t for t in runtime.tasks.with_status("queued") if not t.is_trigger]
    for task in queued:
        if not (task.deferUntil and task.deferUntil > utcnow()):
            enqueue(runtime, task)
    restored = restore_triggers(runtime)
    expired = expire_question(runtime)
    woke = wake_for_pending(runtime)
    runtime.events.log("supervisor_recovered", requeued=len(queued), restored=len(restored))
    done = {"requeued": len(queued), "restored": restored, "expired": expired, "woke": woke}
    _say_started(runtime, done)
    runtime.redis.set(runtime.keys.recovered_at, utcnow().isoformat())
    return done


def _say_started(runtime: Runtime, done: dict[str, Any]) -> None:
    """The start-up line in the chat, when there is a conversation to go on with or something
    was recovered."""
    recovered = [f"{len(done['restored'])} trigger(s) restored" if done["restored"] else "",
                 f"{done['requeued']} queued task(s) sent again" if done["requeued"] else "",
                 "the pending question expired while it was down" if done["expired"] else "",
                 f"{runtime.inbox.size()} message(s) waiting to be answered"
                 if done["woke"] else ""]
    said = "; ".join(part for part in recovered if part)
    if not said and not runtime.conversation.count():
        return
    runtime.conversation.system(
        f"Mimikit {_version()} started. Recovered: {said or 'nothing needed recovering'}.")


def _version() -> str:
    try:
        return metadata.version("mimikit")
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def restore_triggers(runtime: Runtime) -> list[str]:
    """Give timed triggers back a lost beat entry; re-index and re-check conditional ones."""
    restored = []
    for trigger in runtime.triggers.all():
        if trigger.finished:
            continue
        if trigger.type in ("recurring", "scheduled") and not entry_exists(trigger.id):
            if triggers.guarded(runtime, trigger.id, "restore",
                                partial(_reinstall, runtime, trigger), False):
                restored.append(trigger.id)
        elif trigger.type == "conditional":
            triggers.index_conditional(runtime, trigger)
            triggers.evaluate(runtime, trigger.id, cause="recovery", trigger=trigger)
            retire_spent(runtime, [trigger.id])  # e.g. one made on a task already finished
    return restored


def _reinstall(runtime: Runtime, trigger: Task) -> bool:
    triggers.install(runtime, trigger)
    return True


def sweep(runtime: Runtime, now: datetime) -> dict[str, Any]:
    """At most every ``SWEEP_SECONDS``: re-send stranded tasks, restore lost trigger entries.

    A crash between a commit and its follow-up (enqueue, beat entry) leaves work that nothing
    else would pick up; this finds it without waiting for a beat restart.
    """
    if not runtime.redis.set(runtime.keys.meta("sweep"), now.isoformat(), nx=True,
                             ex=SWEEP_SECONDS):
        return {}
    done = {"redispatched": redispatch_stranded(runtime, now),
            "restored": restore_triggers(runtime)}
    return {k: v for k, v in done.items() if v}


def redispatch_stranded(runtime: Runtime, now: datetime) -> list[str]:
    """Send again the queued tasks that waited over ``STRANDED_SECONDS`` while their Celery
    queue is empty: their message was lost (a duplicate delivery would do nothing)."""
    redis, keys = runtime.redis, runtime.keys
    ids = sorted(as_text(i) for i in redis.sdiff(keys.status("queued"), keys.triggers))
    if not ids:
        return []
    depths = queue_depths(runtime)
    sent = []
    for task in runtime.tasks.by_id(ids):
        queue = "planner" if task.role == "planner" else "worker"
        waited = (now - (task.startedAt or task.createdAt)).total_seconds()
        if depths[queue] or waited < STRANDED_SECONDS or task.status != "queued":
            continue
        if task.deferUntil and task.deferUntil > now:
            continue
        if redis.set(keys.meta(f"redispatched:{task.id}"), "1", nx=True, ex=STRANDED_SECONDS):
            enqueue(runtime, task)
            runtime.events.log("task_redispatched", taskId=task.id, traceId=task.traceId,
                              reason="queued with no message in its Celery queue")
            sent.append(task.id)
    return sent

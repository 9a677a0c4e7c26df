"""Retention: finished tasks and every record of them go after MIMIKIT_RETENTION_DAYS; active
tasks, triggers, the conversation and memory stay; data written before retention existed is
brought under it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from mimikit.config import load_settings
from mimikit.exceptions import ConfigError
from mimikit.lifecycle.cancel import cancel_task
from mimikit.models import IntervalSchedule, Message, Result, Task, utcnow
from mimikit.spending.book import KEEP_DAYS
from mimikit.store import fingerprints as fingerprint
from mimikit.store.keys import TASK_LOG_KEPT
from mimikit.store.retention import GRACE_SECONDS, RUNS_KEPT, task_keys
from mimikit.store.schema import migrate, stored_version
from mimikit.supervisor import retention
from mimikit.supervisor.tick import tick
from mimikit.supervisor.upgrades import MIGRATIONS

DAY = 24 * 3600


def finish(runtime, prompt: str, days_ago: float = 0, status: str = "done", **fields) -> Task:
    """A task run to its end through the store, finishing ``days_ago`` days ago."""
    task = runtime.tasks.add([Task(prompt=prompt, **fields)])[0]
    fingerprint.remember(runtime, task)
    runtime.tasks.start(task.id, "owner-1", "celery-1", lambda _owner: True)
    runtime.runs.add_run(task.id, {"role": "worker", "startedAt": utcnow().isoformat()})
    when = utcnow() - timedelta(days=days_ago)
    if status == "done":
        result = Result(id=task.id, status="done", result={"text": prompt}, completedAt=when)
    else:
        result = Result(id=task.id, status="failed", error="it broke", completedAt=when)
    return runtime.tasks.complete(result)


def ttl(runtime, key: str) -> int:
    return int(runtime.redis.ttl(key))


def in_status_sets(runtime, task_id: str) -> list[str]:
    return [s for s in ("queued", "running", "done", "failed", "canceled", "deferred")
            if runtime.redis.sismember(runtime.keys.status(s), task_id)]


def test_retention_days_default_to_30_and_must_be_at_least_one(monkeypatch):
    assert load_settings().retention_days == 30
    monkeypatch.setenv("MIMIKIT_RETENTION_DAYS", "0")
    with pytest.raises(ConfigError, match="MIMIKIT_RETENTION_DAYS='0'.*greater than or equal to 1"):
        load_settings()
    monkeypatch.setenv("MIMIKIT_RETENTION_DAYS", "a month")
    with pytest.raises(ConfigError, match="MIMIKIT_RETENTION_DAYS"):
        load_settings()


def test_a_task_that_finishes_enters_the_index_and_its_records_get_a_time_to_live(runtime):
    done = finish(runtime, "summarize the logs")
    keys, keep = runtime.keys, runtime.settings.retention_seconds + GRACE_SECONDS
    for key in (keys.task(done.id), keys.result(done.id), keys.task_log(done.id),
                keys.runs(done.id)):
        assert keep - 60 < ttl(runtime, key) <= keep, key
    score = runtime.redis.zscore(keys.finished, done.id)
    assert score == pytest.approx(done.completedAt.timestamp())


def test_active_tasks_and_triggers_never_expire(runtime):
    queued, trigger = runtime.tasks.add([
        Task(prompt="later"),
        Task(type="recurring", prompt="every hour", schedule=IntervalSchedule(interval=3600))])
    runtime.runs.add_run(queued.id, {"role": "worker"})
    runtime.events.log("note", taskId=trigger.id)
    keys = runtime.keys
    for key in (keys.task(queued.id), keys.task(trigger.id), keys.task_log(trigger.id)):
        assert ttl(runtime, key) == -1, key
    assert runtime.redis.zcard(keys.finished) == 0
    retention.prune(runtime, utcnow() + timedelta(days=400))
    assert runtime.tasks.get(queued.id) and runtime.tasks.get(trigger.id)

    cancel_task(runtime, trigger.id, stop_running=True)  # a trigger that ends is kept like a task
    assert ttl(runtime, keys.task(trigger.id)) > 0
    assert runtime.redis.zscore(keys.finished, trigger.id) is not None


def test_the_tick_deletes_tasks_past_the_retention_with_every_record_and_id(runtime):
    old = finish(runtime, "old work", days_ago=31)
    old_failed = finish(runtime, "old failure", days_ago=40, status="failed")
    recent = finish(runtime, "recent work", days_ago=29)
    keys = runtime.keys
    runtime.redis.set(keys.cancel_requested(old.id), "canceled")
    runtime.redis.hset(keys.usage("task", old.id), "calls", 1)

    done = tick(runtime)

    assert done["pruned"] == {"tasks": 2}
    for task in (old, old_failed):
        assert [k for k in task_keys(keys, task.id) if runtime.redis.exists(k)] == []
        assert in_status_sets(runtime, task.id) == []
        assert runtime.redis.zscore(keys.finished, task.id) is None
        assert runtime.redis.get(keys.fingerprint(fingerprint.of(task))) is None
    assert runtime.tasks.get(recent.id).status == "done"
    assert runtime.tasks.result(recent.id).result == {"text": "recent work"}
    assert in_status_sets(runtime, recent.id) == ["done"]
    assert "pruned" not in tick(runtime)  # nothing more is due


def test_a_fingerprint_that_names_a_newer_task_is_kept(runtime):
    old = finish(runtime, "check the backups", days_ago=31)
    again = runtime.tasks.add([Task(prompt="check the backups")])[0]
    fingerprint.remember(runtime, again)
    retention.prune(runtime, utcnow())
    assert runtime.tasks.get(old.id) is None
    assert runtime.redis.get(runtime.keys.fingerprint(fingerprint.of(again))) == again.id.encode()


def test_pruning_goes_oldest_first_in_small_batches(runtime):
    tasks = [finish(runtime, f"task {n}", days_ago=60 - n) for n in range(5)]
    cutoff = utcnow().timestamp() - runtime.settings.retention_seconds
    assert retention.prune_finished(runtime, cutoff, batch=2) == 2
    kept = [t.id for t in tasks if runtime.tasks.get(t.id)]
    assert kept == [t.id for t in tasks[2:]]
    assert retention.prune_finished(runtime, cutoff, batch=2) == 2
    assert retention.prune_finished(runtime, cutoff, batch=2) == 1
    assert runtime.redis.zcard(runtime.keys.finished) == 0


def test_the_conversation_is_kept_whatever_its_age(runtime):
    message = Message(role="user", text="hello from long ago",
                      createdAt=utcnow() - timedelta(days=400))
    runtime.conversation.append(message)
    retention.prune(runtime, utcnow())
    assert [m.text for m in runtime.conversation.recent(5)] == ["hello from long ago"]
    assert ttl(runtime, runtime.keys.history) == -1 and ttl(runtime, runtime.keys.messages) == -1


def test_log_and_live_event_entries_older_than_the_retention_go(runtime):
    keys, redis = runtime.keys, runtime.redis
    old_ms = int((utcnow() - timedelta(days=31)).timestamp() * 1000)
    for n in range(1000):
        redis.xadd(keys.log, {"event": "{}"}, id=f"{old_ms + n}-0")
        redis.xadd(keys.events, {"event": "task", "data": "{}"}, id=f"{old_ms + n}-0")
    runtime.events.log("recent_event")
    retention.prune(runtime, utcnow())
    for stream in (keys.log, keys.events):
        entries = redis.xrange(stream)
        old_left = [e for e, _ in entries if int(e.split(b"-")[0]) < old_ms + 1000]
        assert len(old_left) <= 100, stream  # whole blocks go: at most one is left over
    assert runtime.events.recent(1)[0]["type"] == "recent_event"


def test_teller_runs_older_than_the_retention_go_and_newer_ones_stay(runtime):
    now = utcnow()
    for days in (45, 40, 31, 2, 0):
        runtime.runs.add_run("teller", {"role": "teller", "days": days,
                                         "startedAt": (now - timedelta(days=days)).isoformat()})
    assert retention.prune(runtime, now) == {"teller_runs": 3}
    assert [r["days"] for r in runtime.runs.of("teller")] == [2, 0]
    keep = runtime.settings.retention_seconds + GRACE_SECONDS
    assert keep - 60 < ttl(runtime, runtime.keys.runs("teller")) <= keep


def test_task_logs_and_run_lists_keep_their_newest_entries(runtime):
    trigger = runtime.tasks.add([Task(type="recurring", prompt="often",
                                            schedule=IntervalSchedule(interval=60))])[0]
    for n in range(TASK_LOG_KEPT + 20):
        runtime.events.log("trigger_fired", taskId=trigger.id, n=n)
    events = runtime.tasks.log_of(trigger.id)
    assert len(events) == TASK_LOG_KEPT and events[-1]["n"] == TASK_LOG_KEPT + 19
    for n in range(RUNS_KEPT + 5):
        runtime.runs.add_run("trace-1", {"n": n})
    runs = runtime.runs.of("trace-1")
    assert len(runs) == RUNS_KEPT and runs[0]["n"] == 5


def test_spending_index_entries_past_their_keep_time_go(runtime):
    index = runtime.keys.usage_index("trace")
    now = utcnow().timestamp()
    runtime.redis.zadd(index, {"trace-old": now - (KEEP_DAYS["trace"] + 1) * DAY,
                               "trace-new": now - DAY})
    retention.prune(runtime, utcnow())
    assert runtime.redis.zrange(index, 0, -1) == [b"trace-new"]


def _write_like_before(runtime, task_id: str, days_ago: float, status: str = "done") -> None:
    """A finished task as the version before retention stored it: no index, no TTL."""
    keys, redis = runtime.keys, runtime.redis
    when = (utcnow() - timedelta(days=days_ago)).isoformat()
    redis.set(keys.task(task_id), json.dumps({
        "id": task_id, "prompt": f"work {task_id}", "status": status,
        "createdAt": when, "completedAt": when}))
    redis.sadd(keys.status(status), task_id)
    redis.set(keys.result(task_id), json.dumps({"id": task_id, "status": "done",
                                                 "result": {"text": "ok"}}))
    redis.rpush(keys.task_log(task_id), json.dumps({"type": "task_done", "taskId": task_id}))
    redis.rpush(keys.runs(task_id), json.dumps({"role": "worker"}))


def test_data_written_before_retention_comes_under_it_by_the_schema_3_migration(runtime):
    keys, redis = runtime.keys, runtime.redis
    _write_like_before(runtime, "task-old", days_ago=90)
    _write_like_before(runtime, "task-older", days_ago=200, status="failed")
    _write_like_before(runtime, "task-recent", days_ago=3)
    redis.sadd(keys.status("done"), "task-vanished")  # an id whose task is gone
    redis.rpush(keys.runs("trace-1"), json.dumps({"role": "teller"}))
    redis.set(keys.meta("schema"), 2)

    assert migrate(runtime, MIGRATIONS, 3) == [3]

    assert stored_version(runtime) == 3
    assert redis.zcard(keys.finished) == 3
    assert not redis.sismember(keys.status("done"), "task-vanished")
    for task_id in ("task-old", "task-older", "task-recent"):
        for key in (keys.task(task_id), keys.result(task_id), keys.task_log(task_id),
                    keys.runs(task_id)):
            assert ttl(runtime, key) > 0, key
    assert ttl(runtime, keys.runs("trace-1")) > 0

    assert retention.prune(runtime, utcnow()) == {"tasks": 2}
    assert runtime.tasks.get("task-old") is None
    assert runtime.tasks.get("task-older") is None
    assert not redis.sismember(keys.status("failed"), "task-older")
    assert runtime.tasks.get("task-recent").status == "done"
    assert redis.zrange(keys.finished, 0, -1) == [b"task-recent"]


def test_the_migration_leaves_active_tasks_and_their_runs_without_expiry(runtime):
    keys, redis = runtime.keys, runtime.redis
    active = runtime.tasks.add([Task(prompt="still queued")])[0]
    redis.rpush(keys.runs(active.id), json.dumps({"role": "worker"}))
    redis.set(keys.meta("schema"), 2)
    migrate(runtime, MIGRATIONS, 3)
    assert ttl(runtime, keys.task(active.id)) == -1
    assert ttl(runtime, keys.runs(active.id)) == -1
    assert redis.zcard(keys.finished) == 0

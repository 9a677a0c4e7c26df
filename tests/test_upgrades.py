"""Stored state written by another version still loads; start-up brings it forward."""

from __future__ import annotations

import json

import pytest
from redbeat.schedulers import RedBeatSchedulerEntry

from mimikit.celery_app import app
from mimikit.exceptions import ConfigError
from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, Message, Task
from mimikit.scheduling import entries
from mimikit.store.schema import SCHEMA_VERSION, migrate, stored_version
from mimikit.supervisor.upgrades import upgrade
from mimikit.tasks.listing import list_tasks


def test_records_with_unknown_and_missing_fields_still_load(runtime):
    keys, redis = runtime.keys, runtime.redis
    trigger = {"id": "task-old1", "type": "conditional", "prompt": "when A is done",
               "createdAt": "2026-01-01T00:00:00+00:00", "status": "queued",
               "condition": {"type": "task_done", "params": {"taskId": "task-a", "since": 3},
                             "weight": 2},
               "futureField": {"x": 1}}
    redis.set(keys.task("task-old1"), json.dumps(trigger))
    redis.sadd(keys.triggers, "task-old1")
    redis.sadd(keys.status("queued"), "task-old1")
    redis.set(keys.result("task-a"), json.dumps({
        "id": "task-a", "status": "done", "resultType": "text",
        "result": {"text": "ok", "confidence": 0.9}, "tokensSaved": 12}))
    message = Message(role="user", text="hello").model_dump(mode="json")
    redis.hset(keys.messages, message["id"], json.dumps({**message, "mood": "happy"}))
    redis.zadd(keys.history, {message["id"]: 1})

    loaded = runtime.tasks.require("task-old1")
    assert loaded.condition.params["taskId"] == "task-a" and loaded.cooldown == 0
    assert runtime.tasks.result("task-a").result["text"] == "ok"
    assert [m.text for m in runtime.conversation.recent(5)] == ["hello"]
    assert [t["id"] for t in list_tasks(runtime, "triggers")] == ["task-old1"]


def test_unknown_fields_are_still_refused_in_new_input():
    with pytest.raises(ValueError, match="futureField"):
        Task(prompt="x", futureField=1)


def _old_cron_entry(runtime, trigger: Task) -> None:
    """The beat entry as the previous version wrote it: no expression in its arguments."""
    entry = RedBeatSchedulerEntry(entries.entry_name(trigger.id), entries.FIRE_TASK,
                                  entries.every(60), args=[trigger.id],
                                  kwargs={"kind": "cron"}, app=app)
    entry.save()


def test_start_up_migrates_old_cron_entries_once(runtime):
    trigger = submit(runtime, [Task(type="recurring", prompt="each minute",
                                    schedule=IntervalSchedule(cron="* * * * *"))])[0]
    _old_cron_entry(runtime, trigger)
    runtime.redis.delete(runtime.keys.meta("schema"))  # data from before versioning
    assert stored_version(runtime) == 1
    assert upgrade(runtime) == list(range(2, SCHEMA_VERSION + 1))
    entry = RedBeatSchedulerEntry.from_key(
        RedBeatSchedulerEntry.generate_key(app, entries.entry_name(trigger.id)), app=app)
    assert entry.kwargs == {"kind": "cron", "cron": "* * * * *", "zone": None}
    assert stored_version(runtime) == SCHEMA_VERSION and upgrade(runtime) == []


def test_data_from_a_newer_version_is_left_alone_with_a_clear_error(runtime):
    runtime.redis.set(runtime.keys.meta("schema"), SCHEMA_VERSION + 1)
    ran = []
    with pytest.raises(ConfigError, match="upgrade mimikit"):
        migrate(runtime, {SCHEMA_VERSION + 1: ran.append})
    assert ran == [] and stored_version(runtime) == SCHEMA_VERSION + 1


def test_inbox_items_queued_before_items_had_ids_get_one_and_their_trace(runtime):
    message = Message(role="user", text="hi", traceId="msg-1").model_dump(mode="json")
    old = [{"kind": "input", "message": message},
           {"kind": "result", "taskId": "task-a", "role": "worker", "status": "done",
            "traceId": "msg-0"},
           {"kind": "answer", "question": "staging?", "answer": "yes", "source": "user"}]
    runtime.redis.rpush(runtime.keys.inbox, *(json.dumps(item) for item in old))
    runtime.redis.set(runtime.keys.meta("schema"), 3)
    assert upgrade(runtime) == [4]
    items = runtime.inbox.read()
    assert [item.kind for item in items] == ["input", "result", "answer"]
    assert len({item.id for item in items}) == 3
    assert [item.traceId for item in items] == ["msg-1", "msg-0", None]
    assert runtime.inbox.ack([items[1].id]) == 1
    assert [item.kind for item in runtime.inbox.read()] == ["input", "answer"]

"""The runtime skeleton on real Redis and real Celery workers."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest
from processes import children_of, wait_for

from mimikit.celery_app import app
from mimikit.delivery.queues import to_broker_priority
from mimikit.lifecycle.event import Completion
from mimikit.lifecycle.pipeline import finish
from mimikit.models import Result, Task


def test_priority_9_starts_before_queued_priority_1(procs, runtime):
    procs.worker(queues="worker", concurrency=1)
    for n in range(20):
        app.send_task("tests.record", args=[f"p1-{n}", 0.15], queue="worker",
                      priority=to_broker_priority(1))
    started = runtime.keys.meta("started")
    wait_for(lambda: runtime.redis.llen(started) >= 1, message="the first task to start")
    app.send_task("tests.record", args=["p9", 0.0], queue="worker", priority=to_broker_priority(9))
    wait_for(lambda: runtime.redis.llen(started) == 21, timeout=30, message="all 21 tasks")
    order = [label.decode() for label in runtime.redis.lrange(started, 0, -1)]
    position = order.index("p9")
    assert position <= 2, f"priority 9 started at position {position}: {order}"
    assert len([x for x in order[position:] if x.startswith("p1")]) >= 18


def test_priority_mapping_keeps_larger_first_and_reserves_level_0():
    levels = [to_broker_priority(p) for p in range(11)]
    assert levels == sorted(levels, reverse=True)
    assert min(levels) == 1 and max(levels) == 9
    assert to_broker_priority(9) < to_broker_priority(8) < to_broker_priority(2)
    with pytest.raises(ValueError, match="outside 0-10"):
        to_broker_priority(11)


@pytest.mark.slow
def test_task_survives_sigkill_of_its_worker_process_and_completes_exactly_once(procs, runtime):
    main = procs.worker(queues="worker", concurrency=1, pool="prefork")  # a pool process dies
    task = runtime.tasks.add([Task(prompt="sleep a bit")])[0]
    app.send_task("tests.slow_task", args=[task.id, 2.0], queue="worker")
    runs_key = runtime.keys.meta(f"runs:{task.id}")
    first_pid = int(wait_for(lambda: runtime.redis.lindex(runs_key, 0), message="first run"))
    assert first_pid in children_of(main.pid)
    os.kill(first_pid, signal.SIGKILL)

    wait_for(lambda: (t := runtime.tasks.get(task.id)) and t.status == "done",
             timeout=40, message="the task to finish after the kill")
    runs = [int(p) for p in runtime.redis.lrange(runs_key, 0, -1)]
    assert len(runs) == 2 and runs[1] != first_pid, runs
    assert int(runtime.redis.get(runtime.keys.meta(f"completed:{task.id}"))) == 1
    finished = runtime.tasks.get(task.id)
    assert finished.attempts == 2
    assert runtime.tasks.result(task.id).result == {"text": "slept"}

    # A late duplicate delivery of the finished task does nothing.
    app.send_task("tests.slow_task", args=[task.id, 2.0], queue="worker").get(timeout=20)
    assert runtime.redis.llen(runs_key) == 2
    assert int(runtime.redis.get(runtime.keys.meta(f"completed:{task.id}"))) == 1


def test_result_done_status_and_report_are_written_together(runtime):
    tasks = runtime.tasks.add([Task(prompt=f"t{n}") for n in range(300)])
    torn: list[str] = []
    stop = threading.Event()

    def observe() -> None:
        reader = runtime.redis.pipeline(transaction=True)
        while not stop.is_set():
            for task in tasks[::7]:
                reader.get(runtime.keys.task(task.id))
                reader.exists(runtime.keys.result(task.id))
                raw, has_result = reader.execute()
                done = json.loads(raw)["status"] == "done"
                if done != bool(has_result):
                    torn.append(task.id)

    watcher = threading.Thread(target=observe)
    watcher.start()
    for task in tasks:
        runtime.tasks.start(task.id, "me", None, lambda _h: True)
        result = Result(id=task.id, status="done", result={"text": "ok"})
        assert finish(runtime, Completion(task=task, result=result))
    stop.set()
    watcher.join()
    assert torn == []
    assert all(runtime.tasks.get(t.id).status == "done" for t in tasks)
    assert runtime.redis.scard(runtime.keys.status("done")) == 300
    assert runtime.redis.scard(runtime.keys.status("running")) == 0
    assert runtime.redis.llen(runtime.keys.inbox) == 300


def test_a_finished_task_never_runs_or_finishes_again(runtime):
    task = runtime.tasks.add([Task(prompt="once")])[0]
    assert runtime.tasks.start(task.id, "a", None, lambda _h: True).outcome == "started"
    assert runtime.tasks.complete(Result(id=task.id, status="done", result={"text": "first"}))
    again = runtime.tasks.start(task.id, "b", None, lambda _h: False)
    assert (again.outcome, again.detail) == ("finished", "done")
    assert runtime.tasks.complete(Result(id=task.id, status="failed", error="late")) is None
    assert runtime.tasks.result(task.id).result == {"text": "first"}
    assert runtime.tasks.set_status(task.id, "running") is None


def test_a_live_running_task_refuses_a_second_delivery(runtime):
    task = runtime.tasks.add([Task(prompt="busy")])[0]
    assert runtime.tasks.start(task.id, "host:1:a", None, lambda _h: True).outcome == "started"
    second = runtime.tasks.start(task.id, "host:2:b", None, lambda _h: True)
    assert second.outcome == "busy" and second.detail == "host:1:a"
    takeover = runtime.tasks.start(task.id, "host:2:b", None, lambda _h: False)
    assert takeover.outcome == "started" and takeover.task.attempts == 2


def test_deferred_task_does_not_start_before_defer_until(runtime):
    from datetime import timedelta

    from mimikit.models import utcnow

    task = runtime.tasks.add([Task(prompt="later", deferUntil=utcnow() + timedelta(hours=1))])[0]
    assert runtime.tasks.start(task.id, "a", None, lambda _h: True).outcome == "deferred"
    assert runtime.tasks.get(task.id).status == "queued"


def test_log_events_go_to_the_stream_and_log_jsonl(runtime):
    task = runtime.tasks.add([Task(prompt="logged", traceId="trace-1")])[0]
    runtime.events.log("audit", note="hello")
    lines = [json.loads(x) for x in runtime.events.log_path.read_text().splitlines()]
    assert [e["type"] for e in lines] == ["task_created", "audit"]
    assert lines[0]["taskId"] == task.id and lines[0]["traceId"] == "trace-1"
    assert [e["type"] for e in runtime.events.recent()] == ["task_created", "audit"]
    assert runtime.tasks.log_of(task.id)[0]["type"] == "task_created"


def test_history_is_deduplicated_by_created_at_and_text(runtime):
    from mimikit.models import Message

    first = Message(role="user", text="hello")
    twin = Message(role="user", text="hello", createdAt=first.createdAt)
    assert runtime.conversation.append(first, to_inbox=True)
    assert not runtime.conversation.append(twin, to_inbox=True)
    assert [m.id for m in runtime.conversation.recent(10)] == [first.id]
    assert len(runtime.inbox.read()) == 1


def test_history_read_again_holds_new_messages_and_each_read_is_its_own(runtime):
    """Messages read before are not read again, yet every read sees the newest ones, and a
    caller that changes a message it got changes nothing for the next."""
    from mimikit.models import Message
    from mimikit.store.conversation import Conversation

    conversation = runtime.conversation
    first = Message(role="user", text="one")
    conversation.append(first)
    got = conversation.recent(10)
    got[0].text = "changed by a caller"
    second = Message(role="assistant", text="two")
    conversation.append(second)
    again, total = conversation.recent_of_all(10)
    assert [(m.id, m.text) for m in again] == [(first.id, "one"), (second.id, "two")]
    assert total == 2
    fresh = Conversation(runtime.redis, runtime.keys, runtime.events, runtime.inbox)
    assert [m.model_dump() for m in fresh.recent(10)] == [m.model_dump() for m in again]


def test_status_endpoint_reports_redis_workers_and_llm(procs, runtime):
    from mimikit.web import create_app

    procs.worker(queues="worker", concurrency=1, name="status")
    client = create_app(runtime.settings).test_client()
    body = client.get("/api/status").get_json()
    assert body["ok"] is True and body["redis"]["ok"] is True
    assert [w["name"] for w in body["workers"]] == ["status-0@test"]
    assert body["queues"]["worker"] == 0
    assert body["llm"]["configured"] is False
    assert "MIMIKIT_LLM_BASE_URL" in body["llm"]["error"]
    assert body["teller"] == {"state": "idle"}


def test_bad_setting_is_an_error_naming_the_variable(monkeypatch):
    from mimikit.config import load_settings
    from mimikit.exceptions import ConfigError

    monkeypatch.setenv("MIMIKIT_CONCURRENCY", "zero")
    with pytest.raises(ConfigError, match="MIMIKIT_CONCURRENCY='zero'"):
        load_settings()
    monkeypatch.setenv("MIMIKIT_CONCURRENCY", "2")
    monkeypatch.setenv("MIMIKIT_REDIS_URL", "http://nope")
    with pytest.raises(ConfigError, match="MIMIKIT_REDIS_URL"):
        load_settings()


def test_invalid_task_names_the_field():
    from pydantic import ValidationError

    from mimikit.tools.planner_tools import ScheduleArgs

    # A condition is checked by its atoms' kinds where it comes in (tools, API, edits).
    with pytest.raises(ValidationError, match=r"condition\.params\.taskId: Field required"):
        ScheduleArgs(type="conditional", prompt="x",
                     condition={"type": "task_done", "params": {}})
    with pytest.raises(ValidationError, match="needs schedule.runAt"):
        Task(type="scheduled", prompt="x")
    with pytest.raises(ValidationError, match="priority"):
        Task(prompt="x", priority=11)
    with pytest.raises(ValidationError, match="timeout"):
        Task(prompt="x", timeout=10**6)  # past the broker's visibility timeout
    with pytest.raises(ValidationError, match="result.findings"):
        Result(id="r", status="done", resultType="analysis", result={"text": "x"})


def test_celery_configuration_follows_the_design():
    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1
    assert conf.worker_send_task_events and conf.task_send_sent_event
    assert conf.broker_transport_options["priority_steps"] == list(range(10))
    from mimikit.config import load_settings

    longest = load_settings().longest_task_seconds
    assert conf.broker_transport_options["visibility_timeout"] > longest
    assert conf.result_backend_transport_options["visibility_timeout"] > longest
    assert conf.redbeat_redis_url == conf.broker_url
    assert conf.beat_max_loop_interval <= 5 and conf.redbeat_lock_timeout >= 15


def test_the_supervisor_tick_overtakes_a_backlog_of_worker_tasks(procs, runtime):
    procs.worker(queues="worker,supervisor", concurrency=1)
    for n in range(20):
        app.send_task("tests.record", args=[f"w{n}", 0.15], queue="worker",
                      priority=to_broker_priority(5))
    started = runtime.keys.meta("started")
    wait_for(lambda: runtime.redis.llen(started) >= 1, message="the backlog to start")
    entry = app.conf.beat_schedule["mimikit.supervisor.tick"]
    app.send_task(entry["task"], queue="supervisor", **entry["options"])
    wait_for(lambda: runtime.redis.get(runtime.keys.meta("last_tick")), timeout=10,
             message="the tick to run")
    assert runtime.redis.llen(started) <= 3, "the tick waited behind the Worker backlog"


def test_two_instances_on_one_redis_keep_their_queues_apart(procs, runtime, monkeypatch):
    from mimikit.delivery.dispatch import queue_depths

    monkeypatch.setenv("MIMIKIT_KEY_PREFIX", "other")
    other = procs.worker(queues="worker", concurrency=1, name="other", wait=False)
    monkeypatch.setenv("MIMIKIT_KEY_PREFIX", "mimikit")
    wait_for(lambda: runtime.redis.keys("other:workers:*"), timeout=30,
             message="the other instance's worker")
    app.send_task("tests.record", args=["ours", 0.0], queue="worker")
    import time

    time.sleep(1.5)
    assert other.poll() is None
    assert runtime.redis.llen(runtime.keys.meta("started")) == 0
    assert queue_depths(runtime)["worker"] == 1
    procs.worker(queues="worker", concurrency=1, name="ours")
    wait_for(lambda: runtime.redis.llen(runtime.keys.meta("started")) == 1,
             message="our own worker to take it")


def test_a_config_error_never_prints_a_secret_or_a_redis_password(monkeypatch):
    from mimikit.config import load_settings
    from mimikit.exceptions import ConfigError

    monkeypatch.setenv("MIMIKIT_FLOWER_BASIC_AUTH", "only-a-hunter2-password")
    monkeypatch.setenv("MIMIKIT_REDIS_URL", "http://admin:hunter2@redis.example:6379/0")
    monkeypatch.setenv("MIMIKIT_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError) as error:
        load_settings()
    text = str(error.value)
    assert "hunter2" not in text
    assert "MIMIKIT_FLOWER_BASIC_AUTH='***': Value error, must be user:password" in text
    assert "MIMIKIT_REDIS_URL='http://***@redis.example:6379/0'" in text
    assert "MIMIKIT_TIMEZONE='Mars/Olympus'" in text and "IANA" in text


def test_settings_never_show_secrets_in_their_repr(monkeypatch):
    from mimikit.config import load_settings

    monkeypatch.setenv("MIMIKIT_API_TOKEN", "tok-hunter2")
    monkeypatch.setenv("MIMIKIT_LLM_API_KEY", "sk-hunter2")
    settings = load_settings()
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings.model_dump())


@pytest.mark.slow
def test_no_process_prints_the_redis_password(tmp_path):
    import os
    import subprocess
    import sys

    from processes import free_port, wait_for

    from mimikit.embedded_redis import redis_binary
    from mimikit.launcher import spawn, stop_processes

    port, secret = free_port(), "hunter2-redis-secret"
    server = subprocess.Popen([redis_binary(), "--port", str(port), "--bind", "127.0.0.1",
                               "--requirepass", secret, "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMIKIT_")}
    env.update(MIMIKIT_REDIS_URL=f"redis://:{secret}@127.0.0.1:{port}/0",
               MIMIKIT_STATE_DIR=str(tmp_path / "state"), MIMIKIT_WORK_DIR=str(tmp_path))
    mimikit = [sys.executable, "-m", "mimikit"]
    children = [spawn([*mimikit, name], tmp_path / f"{name}.log", env=env, cwd=tmp_path)
                for name in ("worker", "beat", "web")]
    try:
        wait_for(lambda: "ready" in (tmp_path / "worker.log").read_text(errors="replace"),
                 timeout=60, message="the worker to be ready")
        status = subprocess.run([*mimikit, "status"], env=env, capture_output=True, text=True,
                                timeout=60)
        wait_for(lambda: "Acquired lock" in (tmp_path / "beat.log").read_text(errors="replace"),
                 timeout=30, message="beat to take its lock")
    finally:
        stop_processes(children, 15)
        server.kill()
    assert "***@127.0.0.1" in status.stdout and secret not in status.stdout + status.stderr
    for name in ("worker", "beat", "web"):
        assert secret not in (tmp_path / f"{name}.log").read_text(errors="replace"), name

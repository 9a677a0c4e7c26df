"""redis-server killed with ``kill -9`` and restarted from its AOF while a conversation runs,
tasks wait in the queue and a recurring trigger fires.

Everything is real: a ``mimikit web`` process takes the user's inputs over HTTP, Celery workers
run the Teller and the Worker against the scripted LLM, beat fires the trigger. Nobody is told
about the restart: the web app, the workers and beat must reconnect by themselves.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from typing import Any

import pytest
from fault_helpers import Background, completions, wait_until, worker_answers_after
from llm_server import delay, text
from scheduling_helpers import add_trigger, fired, slots
from web_helpers import WebServer

from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, RetryPolicy, Task

DOWN_SECONDS = 3.0


class Poster(Background):
    """Posts numbered inputs to POST /api/input until stopped; remembers every answer."""

    join_seconds = 30.0

    def __init__(self, port: int, every: float = 0.1) -> None:
        super().__init__()
        self.port = port
        self.every = every
        self.acked: dict[str, str] = {}  # message id -> text
        self.refused: Counter[str] = Counter()

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.every):
            n += 1
            self._post(f"input number {n}")

    def _post(self, text: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("POST", "/api/input", json.dumps({"text": text}),
                         {"Content-Type": "application/json"})
            response = conn.getresponse()
            body = response.read()
        except OSError as error:
            self.refused[type(error).__name__] += 1
            return
        finally:
            conn.close()
        if response.status == 202:
            self.acked[json.loads(body)["id"]] = text
        else:
            problem = json.loads(body).get("error", "")  # a JSON answer, never an HTML page
            self.refused[f"{response.status} {problem[:40]}"] += 1


def _snapshot(runtime: Any) -> dict[str, Any]:
    redis, keys = runtime.redis, runtime.keys
    return {"messages": {m.decode() for m in redis.zrange(keys.history, 0, -1)},
            "tasks": {t.id: t.status for t in runtime.tasks.with_status(
                "queued", "running", "done", "failed", "deferred")},
            "triggers": {t.id for t in runtime.triggers.all()}}


def _teller_prompts(llm: Any) -> str:
    return "\n".join(m["content"] or "" for body in llm.requests_for("teller")
                     for m in body["messages"] if m["role"] == "user")


@pytest.mark.slow
def test_redis_kill_9_and_restart_loses_nothing_acknowledged_and_work_resumes(
        wired, procs, llm, redis_server, tmp_path, figures):
    runtime = wired
    llm.default("worker", worker_answers_after(0.4))
    llm.default("teller", delay(0.2, text("Noted.")))  # a run is likely under way at the kill
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    procs.worker(queues="worker", concurrency=1, name="tasks")
    procs.beat()
    web = WebServer(tmp_path / "web.log").start()
    try:
        trigger = add_trigger(runtime, type="recurring", prompt="every second",
                              schedule=IntervalSchedule(interval=1))
        queued = submit(runtime, [Task(prompt=f"queued job {n}") for n in range(8)])
        poster = Poster(web.port).start()
        time.sleep(2.5)

        before = _snapshot(runtime)  # what exists now must exist after the restart
        redis_server.stop(kill=True)
        killed = time.monotonic()
        time.sleep(DOWN_SECONDS)
        redis_server.start()
        back = time.monotonic()
        acked_before_restart = len(poster.acked)
        first_ack = wait_until(lambda: len(poster.acked) > acked_before_restart, 30,
                               "an input accepted after the restart")
        time.sleep(2.0)
        poster.stop()
        after_restart = _utc()

        wait_until(lambda: _settled(runtime, queued, poster, llm), 90,
                             "every acknowledged input answered and every queued task done",
                             describe=lambda: _unsettled(runtime, queued, poster, llm))
        settled = time.monotonic() - back
        wait_until(lambda: any(s > after_restart for s in slots(runtime, trigger.id)), 20,
                   "the trigger to fire after the restart")
        now = _snapshot(runtime)
        history = runtime.redis.hgetall(runtime.keys.messages)
        stored = Counter(json.loads(raw)["text"] for raw in history.values())
        lost_inputs = [i for i in poster.acked if i.encode() not in history]
        figures.record(
            "redis kill -9 + AOF restart", acked_inputs=len(poster.acked),
            refused_while_down=dict(poster.refused), lost_acked_inputs=len(lost_inputs),
            lost_messages=len(before["messages"] - now["messages"]),
            lost_tasks=len(set(before["tasks"]) - set(now["tasks"])),
            lost_triggers=len(before["triggers"] - now["triggers"]),
            down_s=round(back - killed, 1), first_input_accepted_after_s=round(first_ack, 1),
            all_answered_and_done_s_after_restart=round(settled, 1),
            trigger_firings=len(fired(runtime, trigger.id)))
        assert lost_inputs == []
        assert all(stored[text] == 1 for text in poster.acked.values())  # stored once
        assert before["messages"] <= now["messages"]
        assert set(before["tasks"]) <= set(now["tasks"])
        assert before["triggers"] <= now["triggers"]
        assert sum(poster.refused.values()) > 0, "the outage was not seen at all"
        assert all(k.startswith("503") for k in poster.refused), poster.refused
        assert all(completions(runtime, t.id) == 1 for t in queued)
        seen = slots(runtime, trigger.id)
        assert len(seen) == len(set(seen)), "a slot fired twice"
        assert all(p.poll() is None for p in procs.processes), "a process died with Redis"
        # Without help, work received just before the kill waits for a fallback (the stale
        # Teller mark after 30 s, the stranded-task sweep after 60 s, the broker's visibility
        # timeout after hours): resuming sooner shows nothing was left behind.
        assert settled < 25, settled
    finally:
        web.stop()


def _utc():
    from mimikit.models import utcnow

    return utcnow()


def _settled(runtime: Any, queued: list[Task], poster: Poster, llm: Any) -> bool:
    """Every acked input reached a Teller run, the inbox is empty, the queued tasks are done."""
    if runtime.redis.llen(runtime.keys.inbox):
        return False
    if any(t.status != "done" for t in runtime.tasks.by_id([t.id for t in queued])):
        return False
    prompts = _teller_prompts(llm)
    return all(f"user: {text}\n" in prompts + "\n" for text in poster.acked.values())


def _unsettled(runtime: Any, queued: list[Task], poster: Poster, llm: Any) -> str:
    from mimikit.conversation.gate import teller_state

    prompts = _teller_prompts(llm)
    unanswered = [t for t in poster.acked.values() if f"user: {t}\n" not in prompts + "\n"]
    tasks = Counter(t.status for t in runtime.tasks.by_id([t.id for t in queued]))
    return (f"inbox={runtime.redis.llen(runtime.keys.inbox)}, teller={teller_state(runtime)}, "
            f"queued tasks={dict(tasks)}, unanswered={unanswered[:5]} of {len(unanswered)}")


def test_a_heartbeat_missing_only_briefly_is_not_a_lost_worker(runtime):
    """After a Redis restart live deliveries renew their heartbeats within a second or so: a
    task counts as lost only when its heartbeat stayed away a whole ``heartbeat_seconds``."""
    from datetime import timedelta

    from mimikit.models import utcnow
    from mimikit.supervisor.recovery import recover_lost

    grace = runtime.settings.heartbeat_seconds
    once = RetryPolicy(maxAttempts=1)  # no attempt left: a lost one fails
    back, gone = runtime.tasks.add([Task(prompt="comes back", retry=once),
                                    Task(prompt="really gone", retry=once)])
    for task in (back, gone):
        runtime.tasks.start(task.id, "host:1:x", None, lambda _h: True)
        runtime.redis.delete(runtime.keys.heartbeat(task.id))  # as if expired while Redis was down
    now = utcnow()
    assert recover_lost(runtime, now) == []  # only suspected
    runtime.redis.set(runtime.keys.heartbeat(back.id), "host:1:x", px=60_000)  # renewed
    later = now + timedelta(seconds=grace + 0.1)
    assert recover_lost(runtime, later) == [gone.id]
    assert runtime.tasks.require(back.id).status == "running"
    assert runtime.tasks.require(gone.id).status == "failed"
    runtime.redis.delete(runtime.keys.heartbeat(back.id))  # now it is missing again: a new wait
    assert recover_lost(runtime, later + timedelta(seconds=0.1)) == []


def test_a_delivery_interrupted_by_a_redis_restart_runs_again_without_using_an_attempt(
        runtime, tmp_path):
    from processes import RedisServer, free_port

    from mimikit.lifecycle.execution import execute
    from mimikit.models import Result
    from mimikit.store.runtime import build_runtime

    server = RedisServer(free_port(), tmp_path / "redis").start()
    try:
        own = build_runtime(runtime.settings.model_copy(update={"redis_url": server.url}))
        task = own.tasks.add([Task(prompt="interrupted")])[0]  # one attempt only
        runs = []

        def body(control):
            runs.append(control.task.attempts)
            if len(runs) == 1:
                server.stop(kill=True)
                threading.Timer(1.0, server.start).start()
                control.runtime.redis.ping()  # Redis is away: the body cannot go on
            return Result(id=task.id, status="done", result={"text": "ok"})

        execute(own, task.id, "delivery-1", 30, body)
        waiting = own.tasks.require(task.id)
        assert waiting.status == "deferred" and waiting.attempts == 0, waiting
        assert "interrupted while Redis was unreachable" in waiting.error
        execute(own, task.id, "delivery-2", 30, body)
        done = own.tasks.require(task.id)
        assert (done.status, done.attempts, runs) == ("done", 1, [1, 1])
    finally:
        server.stop()

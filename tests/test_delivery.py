"""One delivery at a time: live holders, recorded cancels, lost heartbeats, lost messages."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from mimikit.delivery.dispatch import queue_depths
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.models import Result, Task, utcnow
from mimikit.supervisor import recovery


def test_a_live_holder_refuses_a_second_delivery_whatever_the_status(runtime):
    task = runtime.tasks.add([Task(prompt="x")])[0]
    assert runtime.tasks.start(task.id, "h:1:a", None, lambda _h: True).outcome == "started"
    # recovery moved it back to queued while the first delivery still runs
    runtime.tasks.update(task.id, lambda t: t.model_copy(update={"status": "queued"}))
    second = runtime.tasks.start(task.id, "h:2:b", None, lambda _h: True)
    assert second.outcome == "busy" and second.detail == "h:1:a"


def test_a_cancel_recorded_while_no_worker_ran_it_stops_the_redelivery(runtime):
    task = runtime.tasks.add([Task(prompt="x")])[0]
    runtime.tasks.start(task.id, "h:1:a", None, lambda _h: True)
    runtime.tasks.request_cancel(task.id)  # running: only the flag is set
    runtime.redis.delete(runtime.keys.heartbeat(task.id))  # its worker died
    ran = []
    redelivery = execute(runtime, task.id, "b", 60, lambda control: ran.append(1))
    assert redelivery.outcome == "canceled" and ran == []
    assert runtime.tasks.get(task.id).status == "canceled"


def test_a_delivery_whose_heartbeat_was_taken_over_stops_without_writing(runtime):
    task = runtime.tasks.add([Task(prompt="x")])[0]
    running = threading.Event()

    def body(control: RunControl) -> Result:
        running.set()
        for _ in range(200):
            control.check()
            time.sleep(0.02)
        return Result(id=task.id, status="done", result={"text": "late"})

    worker = threading.Thread(target=execute, args=(runtime, task.id, "a", 60, body))
    worker.start()
    running.wait(5)
    runtime.redis.set(runtime.keys.heartbeat(task.id), "other:2:b")  # another delivery holds it
    worker.join(10)
    assert not worker.is_alive()
    assert runtime.tasks.result(task.id) is None
    assert runtime.tasks.get(task.id).status == "running"


def test_a_queued_task_whose_message_was_lost_is_sent_again(runtime):
    old = utcnow() - timedelta(minutes=5)
    task = runtime.tasks.add([Task(prompt="stranded", createdAt=old)])[0]
    fresh = runtime.tasks.add([Task(prompt="just queued")])[0]
    assert queue_depths(runtime)["worker"] == 0
    assert recovery.sweep(runtime, utcnow()) == {"redispatched": [task.id]}
    assert queue_depths(runtime)["worker"] == 1
    assert recovery.sweep(runtime, utcnow()) == {}  # at most once a minute
    assert fresh.id not in [e.get("taskId") for e in runtime.events.recent()
                            if e["type"] == "task_redispatched"]


def test_failing_a_lost_task_rechecks_its_heartbeat_so_a_fresh_redelivery_is_not_failed(runtime):
    task = runtime.tasks.add([Task(prompt="x")])[0]
    runtime.tasks.start(task.id, "h:1:a", None, lambda _h: True)
    runtime.redis.delete(runtime.keys.heartbeat(task.id))  # its worker died
    # Recovery saw the heartbeat gone; before it fails the task, a redelivery starts it again.
    assert runtime.tasks.start(task.id, "h:2:b", None, lambda _h: False).outcome == "started"
    assert recovery.handle_lost(runtime, task.id, utcnow()) is False
    assert runtime.tasks.require(task.id).status == "running"
    assert runtime.tasks.result(task.id) is None

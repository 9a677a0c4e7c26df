"""Recurring, cron and scheduled triggers fired by a real beat and a real supervisor worker."""

from __future__ import annotations

import time
from datetime import timedelta
from itertools import pairwise

import pytest
from processes import wait_for
from scheduling_helpers import add_trigger, fired, firing_events, slots

from mimikit.models import IntervalSchedule, RunAtSchedule, utcnow
from mimikit.scheduling import entries, timed


def test_interval_trigger_fires_three_times_in_seven_seconds_with_its_times(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    start = time.monotonic()
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=2))
    wait_for(lambda: len(fired(runtime, trigger.id)) >= 3, timeout=7.5, message="3 firings")
    assert time.monotonic() - start < 7.5
    children = fired(runtime, trigger.id)
    assert all(c.type == "oneshot" and c.triggerId == trigger.id and c.status == "queued"
               and not c.catchUp for c in children)
    stored = runtime.tasks.require(trigger.id).schedule
    seen = slots(runtime, trigger.id)
    assert stored.lastRunAt == seen[-1]
    assert stored.nextRunAt == seen[-1] + timedelta(seconds=2)
    assert [round((b - a).total_seconds(), 3) for a, b in pairwise(seen)] == [2.0] * (
        len(seen) - 1)
    assert seen[0] == trigger.schedule.nextRunAt


def test_scheduled_trigger_fires_on_time_not_early_and_is_gone(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    run_at = utcnow() + timedelta(seconds=3)
    trigger = add_trigger(runtime, type="scheduled", schedule=RunAtSchedule(runAt=run_at))
    assert entries.entry_exists(trigger.id)
    child = wait_for(lambda: fired(runtime, trigger.id), timeout=8, message="firing")[0]
    assert run_at <= child.createdAt < run_at + timedelta(seconds=2)
    done = runtime.tasks.require(trigger.id)
    assert done.status == "done"
    assert not entries.entry_exists(trigger.id)
    assert trigger.id not in {t.id for t in runtime.triggers.all()}
    time.sleep(1.5)
    assert len(fired(runtime, trigger.id)) == 1


def test_scheduled_trigger_in_the_past_fires_once_at_once(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    run_at = utcnow() - timedelta(hours=2)
    trigger = add_trigger(runtime, type="scheduled", schedule=RunAtSchedule(runAt=run_at))
    child = wait_for(lambda: fired(runtime, trigger.id), timeout=5, message="firing")[0]
    assert child.createdAt - trigger.createdAt < timedelta(seconds=3)
    assert not child.catchUp
    time.sleep(1.5)
    assert len(fired(runtime, trigger.id)) == 1


@pytest.mark.slow
def test_cron_trigger_fires_at_the_minute_boundary(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(cron="* * * * *"))
    boundary = trigger.schedule.nextRunAt
    assert boundary.second == 0 and boundary > utcnow()
    child = wait_for(lambda: fired(runtime, trigger.id), timeout=65, message="cron firing")[0]
    assert boundary <= child.createdAt < boundary + timedelta(seconds=2)
    stored = runtime.tasks.require(trigger.id).schedule
    assert stored.lastRunAt == boundary
    assert stored.nextRunAt == boundary + timedelta(minutes=1)


def test_canceled_trigger_loses_its_beat_entry_and_stops(runtime, procs):
    from mimikit.lifecycle.cancel import cancel_task

    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=1))
    wait_for(lambda: fired(runtime, trigger.id), timeout=5, message="first firing")
    ok, _ = cancel_task(runtime, trigger.id, stop_running=False)
    assert ok and not entries.entry_exists(trigger.id)
    count = len(fired(runtime, trigger.id))
    time.sleep(2.5)
    assert len(fired(runtime, trigger.id)) == count


@pytest.mark.slow
def test_beat_killed_and_restarted_neither_duplicates_nor_stops(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    first = procs.beat()
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=2))
    wait_for(lambda: len(fired(runtime, trigger.id)) >= 2, timeout=8, message="2 firings")
    procs.kill(first)
    before = len(fired(runtime, trigger.id))
    procs.beat(name="beat-again")
    wait_for(lambda: len(fired(runtime, trigger.id)) >= before + 3, timeout=15,
             message="firing after the restart")
    seen = slots(runtime, trigger.id)
    assert len(seen) == len(set(seen))
    assert seen == sorted(seen)


@pytest.mark.slow
def test_two_beats_at_once_never_fire_a_slot_twice(runtime, procs):
    procs.worker(queues="supervisor", name="sup")
    procs.beat(name="beat-a")
    procs.beat(name="beat-b")
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=1))
    wait_for(lambda: len(fired(runtime, trigger.id)) >= 5, timeout=10, message="5 firings")
    seen = slots(runtime, trigger.id)
    assert len(seen) == len(set(seen))


@pytest.mark.slow
def test_after_downtime_misfire_once_catches_up_once_and_skip_does_not(runtime, procs):
    import signal

    procs.worker(queues="supervisor", name="sup")
    first = procs.beat()
    once = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=2),
                       misfire="once")
    skip = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=2),
                       misfire="skip")
    wait_for(lambda: fired(runtime, once.id) and fired(runtime, skip.id), timeout=6,
             message="first firings")
    procs.kill(first, signal.SIGTERM)
    stopped = utcnow()
    time.sleep(6.5)  # three intervals and a bit
    procs.beat(name="beat-again")
    wait_for(lambda: [e for e in firing_events(runtime, skip.id) if e.get("skipped")],
             timeout=10, message="the skip trigger to pass over its missed slots")
    wait_for(lambda: any(t.createdAt > stopped + timedelta(seconds=6.5)
                         and not t.catchUp for t in fired(runtime, once.id)),
             timeout=10, message="a regular firing after the catch-up")
    catch_ups = [t for t in fired(runtime, once.id) if t.catchUp]
    assert len(catch_ups) == 1
    assert not [t for t in fired(runtime, skip.id) if t.catchUp]
    assert [e for e in firing_events(runtime, once.id) if e.get("catchUp")]
    for trigger in (once, skip):
        seen = slots(runtime, trigger.id)
        assert len(seen) == len(set(seen))


@pytest.mark.slow
def test_redis_restart_does_not_stop_beat_from_firing(runtime, procs, redis_server):
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=1))
    wait_for(lambda: len(fired(runtime, trigger.id)) >= 2, timeout=6, message="2 firings")
    time.sleep(1.2)  # appendfsync everysec: what beat wrote is on disk
    redis_server.stop(kill=True)
    time.sleep(3)  # beat publishes into a dead connection meanwhile
    redis_server.start()
    wait_for(lambda: _ping(runtime), timeout=10, message="redis back")
    after = len(fired(runtime, trigger.id))
    wait_for(lambda: len(fired(runtime, trigger.id)) >= after + 4, timeout=25,
             message="firing after the Redis restart")
    seen = slots(runtime, trigger.id)
    assert len(seen) == len(set(seen))


def _ping(runtime) -> bool:
    try:
        return bool(runtime.redis.ping())
    except Exception:  # noqa: BLE001 - redis is still coming back
        return False


def test_file_changed_glob_fires_within_two_seconds_of_a_touch(runtime, procs):
    import os
    from pathlib import Path

    src = Path(runtime.settings.work_dir, "src", "lib")
    src.mkdir(parents=True)
    (src / "a.ts").write_text("x")
    procs.worker(queues="supervisor", name="sup")
    procs.beat()
    trigger = add_trigger(runtime, type="conditional",
                          condition={"type": "file_changed", "params": {"path": "src/**/*.ts"}})
    time.sleep(1.5)
    assert fired(runtime, trigger.id) == []
    stamp = time.time() + 3
    os.utime(src / "a.ts", (stamp, stamp))
    touched = time.monotonic()
    wait_for(lambda: fired(runtime, trigger.id), timeout=2, message="the file_changed firing")
    assert time.monotonic() - touched < 2
    time.sleep(1.5)
    assert len(fired(runtime, trigger.id)) == 1


def test_chain_runs_through_real_workers_in_order(stack, procs, llm):
    from llm_server import tool_call

    from mimikit.delivery import dispatch
    from mimikit.models import Task

    runtime = stack
    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "step done"}))
    a = Task(prompt="step A")
    runtime.tasks.add([a])
    b = add_trigger(runtime, type="conditional", prompt="step B",
                    condition={"type": "task_done", "params": {"taskId": a.id}})
    c = add_trigger(runtime, type="conditional", prompt="step C",
                    condition={"type": "task_done", "params": {"taskId": b.id}})
    failed = add_trigger(runtime, type="conditional", prompt="on failure",
                         condition={"type": "task_failed", "params": {"taskId": a.id}})
    dispatch.enqueue(runtime, a)
    wait_for(lambda: [t for t in fired(runtime, c.id) if t.status == "done"], timeout=20,
             message="step C to complete")
    a_done = runtime.tasks.require(a.id).completedAt
    b_task, c_task = fired(runtime, b.id)[0], fired(runtime, c.id)[0]
    assert a_done <= b_task.createdAt <= b_task.completedAt <= c_task.createdAt
    assert len(fired(runtime, b.id)) == 1 and len(fired(runtime, c.id)) == 1
    assert fired(runtime, failed.id) == []


def test_concurrent_firings_of_one_slot_create_exactly_one_task(runtime):
    from concurrent.futures import ThreadPoolExecutor

    from mimikit.models import utcnow as now

    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=60))
    slot = trigger.schedule.nextRunAt
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(
            lambda _n: timed.fire_timed(runtime, trigger.id, slot, now()), range(16)))
    # one claims the slot; the rest find it claimed, or the trigger already past it
    assert outcomes.count("fired") == 1, outcomes
    assert set(outcomes) <= {"fired", "duplicate", "stale"}, outcomes
    assert len(fired(runtime, trigger.id)) == 1


@pytest.mark.parametrize(("source", "notices"), [("user", 1), ("planner", 0), ("teller", 0)])
def test_a_cancel_is_a_notice_to_the_teller_unless_an_agent_made_it(runtime, source, notices):
    from mimikit.lifecycle.cancel import cancel_task
    from mimikit.store.inbox import NoticeItem

    trigger = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=60))
    assert cancel_task(runtime, trigger.id, stop_running=False, source=source)[0]
    assert runtime.tasks.require(trigger.id).status == "canceled"
    # the Planner reports its cancel in its result, the Teller in its reply: no second word
    found = [item for item in runtime.inbox.peek() if isinstance(item, NoticeItem)]
    expected = [f"task {trigger.id} was canceled by {source}"] * notices
    assert [item.text for item in found] == expected

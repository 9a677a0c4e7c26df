"""One Teller at a time: wakes coalesce, a dead holder's lease is taken over, none is lost."""

from __future__ import annotations

import os

from processes import wait_for

from mimikit.conversation import gate as teller_gate
from mimikit.store.identity import HOSTNAME, owner_alive
from mimikit.store.inbox import NoticeItem


def test_wakes_while_one_is_queued_send_a_single_run(runtime):
    sent: list[int] = []
    assert teller_gate.wake_teller(runtime, lambda: sent.append(1))
    assert not teller_gate.wake_teller(runtime, lambda: sent.append(1))
    assert sent == [1]
    assert teller_gate.teller_state(runtime)["state"] == "queued"


def test_a_wake_during_a_run_is_seen_when_the_lease_is_released(runtime):
    me = f"{HOSTNAME}:{os.getpid()}:a"
    assert teller_gate.acquire(runtime, me, owner_alive)
    assert teller_gate.teller_state(runtime)["state"] == "running"
    teller_gate.wake_teller(runtime, lambda: None)
    other = f"{HOSTNAME}:{os.getpid()}:b"
    assert not teller_gate.acquire(runtime, other, owner_alive)  # live holder
    assert teller_gate.release(runtime, me) is True  # the wake is still pending: run again
    assert teller_gate.more_to_do(runtime) and not teller_gate.more_to_do(runtime)
    runtime.redis.rpush(runtime.keys.inbox, "{}")  # no wake, but an item waits
    assert teller_gate.more_to_do(runtime) and teller_gate.more_to_do(runtime)


def test_the_lease_of_a_dead_holder_is_taken_over(runtime):
    dead = f"{HOSTNAME}:999999999:x"
    runtime.redis.set(runtime.keys.teller_lock, dead, ex=600)
    me = f"{HOSTNAME}:{os.getpid()}:y"
    assert teller_gate.acquire(runtime, me, owner_alive)
    assert runtime.redis.get(runtime.keys.teller_lock).decode() == me
    assert teller_gate.renew(runtime, me)
    assert not teller_gate.renew(runtime, dead)


def test_a_failed_send_leaves_no_queued_mark(runtime):
    def broken() -> None:
        raise ConnectionError("broker away")

    try:
        teller_gate.wake_teller(runtime, broken)
    except ConnectionError:
        pass
    assert teller_gate.teller_state(runtime)["state"] == "idle"


def test_a_stale_queued_mark_with_an_empty_queue_is_cleared_and_the_teller_woken(runtime):
    from datetime import timedelta

    from mimikit.models import utcnow

    old = (utcnow() - timedelta(seconds=120)).isoformat()
    runtime.redis.set(runtime.keys.teller_queued, old)
    runtime.inbox.push(NoticeItem(text="pending"))
    assert not teller_gate.clear_stale_queued(runtime, queue_empty=False)
    assert teller_gate.wake_for_pending(runtime) is True  # cleared, then a new run is queued
    from mimikit.delivery.dispatch import queue_depths

    assert queue_depths(runtime)["teller"] == 1


def test_the_supervisor_tick_expires_the_question_with_its_default(runtime):
    from datetime import timedelta

    from mimikit.models import PendingQuestion, utcnow
    from mimikit.supervisor.tick import tick

    asked = utcnow() - timedelta(seconds=10)
    runtime.conversation.ask(PendingQuestion(question="Which?", timeout=5, default="A",
                                               createdAt=asked))
    done = tick(runtime)
    assert done.get("expired") is True
    assert runtime.conversation.question() is None
    (answer,) = [i for i in runtime.inbox.read() if i.kind == "answer"]
    assert (answer.answer, answer.source) == ("A", "default")


def test_a_queued_mark_older_than_the_redis_server_is_stale_at_once(runtime, redis_server):
    from datetime import timedelta

    from mimikit.models import utcnow

    # a wake whose message was cut by Redis going away: its mark came back from the AOF alone
    wait_for(lambda: runtime.redis.info("server")["uptime_in_seconds"] > 3, timeout=10,
             message="a Redis older than the mark")
    young = (utcnow() - timedelta(seconds=2)).isoformat()
    runtime.redis.set(runtime.keys.teller_queued, young)
    assert not teller_gate.clear_stale_queued(runtime, queue_empty=True)  # its message may come
    redis_server.stop(kill=True)
    redis_server.start()  # from its AOF, the mark with it
    wait_for(lambda: runtime.redis.get(runtime.keys.teller_queued) is not None,
             message="the mark back from the AOF")
    assert teller_gate.clear_stale_queued(runtime, queue_empty=True)
    assert runtime.redis.get(runtime.keys.teller_queued) is None

"""The beat holding the RedBeat lock killed with ``kill -9`` around a due slot, again and again,
while a standby beat waits: no slot fires twice, and none is lost beyond the misfire policy
(``once``: the missed slots become one catch-up run; ``skip``: they are passed over, logged)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from fault_helpers import wait_until
from scheduling_helpers import add_trigger, fired, firing_events

from mimikit.models import IntervalSchedule, utcnow

INTERVAL = 1.0
# When each kill happens relative to a due slot: just before, just after (the beat may have
# published the slot but not yet recorded it), and on it.
KILL_OFFSETS = (-0.05, 0.05, 0.0)


def _holder_pid(runtime: Any) -> int | None:
    raw = runtime.redis.get(runtime.keys.meta("beat"))
    return int(json.loads(raw)["owner"].rsplit(":", 1)[1]) if raw else None


def _sleep_until(moment: datetime) -> None:
    time.sleep(max((moment - utcnow()).total_seconds(), 0))


def _gaps(runtime: Any, trigger_id: str) -> list[tuple[int, dict[str, Any]]]:
    """(slots missed before it, event) for each firing event after the first."""
    events = sorted(firing_events(runtime, trigger_id), key=lambda e: e["slot"])
    times = [datetime.fromisoformat(e["slot"]) for e in events]
    return [(round((b - a).total_seconds() / INTERVAL) - 1, event)
            for a, b, event in zip(times, times[1:], events[1:], strict=False)]


@pytest.mark.slow
def test_beat_kill_9_with_a_standby_neither_repeats_nor_loses_a_slot(runtime, procs, figures):
    procs.worker(queues="supervisor", name="sup")
    beats = {p.pid: p for p in (procs.beat(name="beat-a"), procs.beat(name="beat-b"))}
    schedule = IntervalSchedule(interval=INTERVAL)
    once = add_trigger(runtime, type="recurring", schedule=schedule, misfire="once")
    skip = add_trigger(runtime, type="recurring", schedule=schedule, misfire="skip")
    wait_until(lambda: len(fired(runtime, once.id)) >= 2 and _holder_pid(runtime) in beats, 20,
               "the first firings under one of the two beats")

    takeovers = []
    for n, offset in enumerate(KILL_OFFSETS):
        holder = beats.pop(_holder_pid(runtime))
        due = runtime.tasks.require(once.id).schedule.nextRunAt
        _sleep_until(due + timedelta(seconds=offset))
        procs.kill(holder)
        killed, killed_at = time.monotonic(), utcnow()
        wait_until(lambda h=holder: _holder_pid(runtime) not in (None, h.pid), 60,
                   "the standby to take the lock")
        taken = time.monotonic() - killed
        wait_until(lambda k=killed_at: any(t.createdAt > k for t in fired(runtime, once.id)),
                   20, "a firing under the new holder")
        takeovers.append((round(taken, 1), round(time.monotonic() - killed, 1)))
        standby = procs.beat(name=f"beat-{n}")  # a standby for the next round
        beats[standby.pid] = standby
        log = procs.log_dir / f"beat-{n}-{len(procs.processes) - 1}.log"
        wait_until(lambda f=log: f.exists() and "beat: Starting" in f.read_text(), 30,
                   "the new standby to be up")
    settle = utcnow() + timedelta(seconds=3 * INTERVAL)
    wait_until(lambda: all(datetime.fromisoformat(e["slot"]) > settle
                           for e in firing_events(runtime, once.id)[-1:]), 20, "more slots")

    figures.record("beat kill -9 with a standby", kills=len(KILL_OFFSETS),
                   takeover_s=[t for t, _ in takeovers],
                   first_firing_after_kill_s=[f for _, f in takeovers])
    # On one host the standby sees the holder is dead: it need not sit out the lock timeout.
    assert max(t for t, _ in takeovers) < 10, takeovers
    for trigger in (once, skip):
        events = firing_events(runtime, trigger.id)
        seen = [e["slot"] for e in events]
        gaps = _gaps(runtime, trigger.id)
        late = [e for k, e in gaps if k > 0]
        figures.record(f"misfire {trigger.misfire}", slots=len(seen),
                       duplicates=len(seen) - len(set(seen)),
                       gaps=[k for k, _ in gaps if k > 0],
                       catch_ups=sum(1 for e in events
                                     if e["type"] == "trigger_fired" and e.get("catchUp")),
                       skipped=sum(1 for e in events if e.get("skipped")))
        assert len(seen) == len(set(seen)), f"a slot fired twice: {seen}"
        assert len(late) <= len(KILL_OFFSETS), gaps
        for _missed, event in gaps:
            start = datetime.fromisoformat(firing_events(runtime, trigger.id)[0]["slot"])
            offset = (datetime.fromisoformat(event["slot"]) - start).total_seconds()
            assert abs(offset / INTERVAL - round(offset / INTERVAL)) < 1e-6, event  # on the grid
        for _missed, event in [(k, e) for k, e in gaps if k > 0]:
            if trigger.misfire == "once":  # the missed slots ran once, as a catch-up
                assert event["type"] == "trigger_fired" and event.get("catchUp"), event
            else:  # the missed slots were passed over, and said so
                assert event["type"] == "trigger_skipped" and event.get("skipped"), event
    assert not [t for t in fired(runtime, skip.id) if t.catchUp]

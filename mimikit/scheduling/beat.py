"""Mimikit's beat: RedBeat, hardened.

RedBeat 2.4.2 keeps one producer for its whole life; once its broker connection breaks (a Redis
restart), every publish fails and is only logged. This scheduler re-creates its producer on a
publish error, survives Redis being briefly away instead of exiting, takes back the lock when it
lost it, and takes over a lock left by a beat that died on this host (``kill -9``). Trigger
entries (``entries``) advance only after their publish succeeded.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import UTC, datetime
from typing import Any

from celery.beat import SchedulingError
from redbeat import RedBeatScheduler
from redbeat.decoder import RedBeatJSONEncoder
from redbeat.schedulers import LUA_EXTEND_TO_SCRIPT, get_redis
from redis.exceptions import LockError, RedisError

from mimikit.models import utcnow
from mimikit.scheduling import entries
from mimikit.scheduling.liveness import LIVENESS_SECONDS, liveness  # noqa: F401 - re-exported
from mimikit.store import lease
from mimikit.store.identity import HOSTNAME, owner_alive
from mimikit.store.runtime import get_runtime

log = logging.getLogger("mimikit.beat")
STANDBY_POLL_SECONDS = 1.0


class Scheduler(RedBeatScheduler):
    """RedBeat with its entries and lock under ``KEY_PREFIX:redbeat:``, made to self-heal."""

    lock: Any = None

    def __init__(self, app: Any, **kwargs: Any) -> None:
        self._advanced: list[tuple[Any, datetime]] = []
        self.runtime = get_runtime()  # Celery builds the scheduler: this is the edge
        super().__init__(app, **kwargs)
        try:
            self._take_over_stale_lock()
        except RedisError as error:
            log.warning("beat: cannot check the lock holder: %s", error)

    # --- the loop -------------------------------------------------------------------------

    @property
    def schedule(self) -> dict[str, Any]:
        """The entries due now or next, loaded in two round trips (RedBeat: one per entry)."""
        client, conf = get_redis(self.app), self.app.redbeat_conf
        # A float: RedBeat's whole-second ``to_timestamp`` leaves entries due within the
        # current second unloaded, so they fire up to a second late, in bursts.
        now = self.app.now().timestamp()
        with client.pipeline() as pipe:
            pipe.zrangebyscore(conf.schedule_key, 0, now)
            pipe.zrangebyscore(conf.schedule_key, f"({now}", now + self.max_interval,
                               start=0, num=1)
            due, soon = pipe.execute()
        keys = due + soon
        with client.pipeline() as pipe:
            for key in keys:
                pipe.hmget(key, "definition", "meta")
            rows = pipe.execute()
        entries: dict[str, Any] = {}
        for key, (definition, meta) in zip(keys, rows, strict=True):
            if not definition:
                log.warning("beat: entry %s has no definition; removing it", key)
                client.zrem(conf.schedule_key, key)
                continue
            data = self.Entry.decode_definition(definition)
            timing = self.Entry.decode_meta(meta)
            entry = self.Entry(app=self.app, **{**data, **timing})
            entry.last_run_at = timing["last_run_at"]
            entries[entry.name] = entry
        return entries

    def tick(self, min: Any = min, **kwargs: Any) -> float:  # noqa: A002 - celery's signature
        try:
            if not self._hold_lock():
                return self.max_interval
            remaining = []
            try:
                for entry in self.schedule.values():
                    next_time = self.maybe_due(entry, producer=self.producer)
                    if next_time:
                        remaining.append(next_time)
            finally:
                self._flush_advances()
            remaining.append(self._until_next_entry())
            self.record_holder()
        except RedisError as error:
            log.warning("beat: Redis unavailable (%s); trying again in 1 s", error)
            return 1.0
        return float(min([*remaining, self.max_interval]))

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True,
                    **kwargs: Any) -> Any:
        if entry.task != entries.FIRE_TASK:
            return self._publish(entry, producer, advance)
        now = datetime.now(UTC)
        slot = entries.slot_of(entry, now)
        plain = entry.kwargs
        entry.kwargs = {**(plain or {}), "slot": slot.isoformat(), "sentAt": now.isoformat()}
        try:
            result = self._publish(entry, producer, advance=False)
        finally:
            entry.kwargs = plain
        # Advance only after the publish: a crash in between re-sends this slot (deduplicated).
        if (plain or {}).get("kind") == "at":
            entry.delete()
        else:
            self._advanced.append((entry, entries.advance(entry, slot)))
        return result

    def _until_next_entry(self) -> float:
        """Seconds until the next entry is due (RedBeat only looks at the one it loaded)."""
        now = time.time()
        upcoming = get_redis(self.app).zrangebyscore(
            self.app.redbeat_conf.schedule_key, f"({now}", "+inf", start=0, num=1,
            withscores=True)
        return max(upcoming[0][1] - now, 0.0) if upcoming else self.max_interval

    def _flush_advances(self) -> None:
        """Store the new ``last_run_at`` of every entry fired this tick, in one round trip."""
        if not self._advanced:
            return
        schedule_key = self.app.redbeat_conf.schedule_key
        with get_redis(self.app).pipeline() as pipe:
            for entry, due in self._advanced:
                meta = json.dumps({"last_run_at": entry.last_run_at}, cls=RedBeatJSONEncoder)
                pipe.hset(entry.key, mapping={"meta": meta, "definition": entries.definition(entry)})
                pipe.zadd(schedule_key, {entry.key: due.timestamp()})
            pipe.execute()
        self._advanced.clear()

    def _publish(self, entry: Any, producer: Any, advance: bool) -> Any:
        try:
            return super().apply_async(entry, producer=producer, advance=advance)
        except SchedulingError as error:
            log.warning("beat: publishing %s failed (%s); re-creating the producer",
                        entry.name, error)
            self._renew_producer()
            return super().apply_async(entry, producer=self.producer, advance=False)

    def _renew_producer(self) -> None:
        self.__dict__.pop("producer", None)
        self.__dict__.pop("_maybe_due_kwargs", None)
        connection = self.__dict__.pop("connection", None)
        if connection is not None:
            try:
                connection.release()
            except (OSError, RedisError) as error:
                log.info("beat: closing the broken connection: %s", error)

    # --- the lock -------------------------------------------------------------------------

    def _new_lock(self) -> Any:
        client = get_redis(self.app)
        lock = client.lock(self.lock_key, timeout=self.lock_timeout, sleep=self.max_interval)
        lock.lua_extend = client.register_script(LUA_EXTEND_TO_SCRIPT)
        return lock

    def _hold_lock(self) -> bool:
        """Extend the lock; re-take it when it was lost (e.g. Redis restarted without it)."""
        if not self.lock_key:
            return True
        if self.lock is None:
            self.lock = self._new_lock()
        else:
            try:
                self.lock.extend(int(self.lock_timeout))
                return True
            except LockError as error:
                log.warning("beat: lost the lock (%s); trying to take it back", error)
        if self.lock.acquire(blocking=False):
            log.info("beat: Acquired lock")
            self.record_holder()
            return True
        return False

    def wait_for_lock(self) -> None:
        """Block until this beat holds the lock (this replaces RedBeat's own wait).

        RedBeat waits for the lock to expire (``redbeat_lock_timeout``) even when its holder is
        known to be dead; here a standby takes the lock of a beat that died on this host within
        ``STANDBY_POLL_SECONDS``, and one on another host once the lock expires.
        """
        lock = self._new_lock()
        while True:
            try:
                if lock.acquire(blocking=False):
                    break
                self._take_over_stale_lock()
            except RedisError as error:
                log.warning("beat: standby cannot reach Redis: %s", error)
            time.sleep(STANDBY_POLL_SECONDS)
        self.lock = lock
        log.info("beat: Acquired lock")

    def _holder_key(self) -> str:
        return self.runtime.keys.meta("beat")

    def record_holder(self) -> None:
        """Note who holds the lock and that it is alive (read by ``liveness``)."""
        token = getattr(getattr(self.lock, "local", None), "token", None)
        if isinstance(token, bytes):
            token = token.decode()
        holder = {"owner": f"{HOSTNAME}:{os.getpid()}", "token": token,
                  "at": utcnow().isoformat()}
        get_redis(self.app).set(self._holder_key(), json.dumps(holder))

    def _take_over_stale_lock(self) -> None:
        """Free the lock of a beat that died on this host, so a restart need not wait it out."""
        client = get_redis(self.app)
        raw, token = client.get(self._holder_key()), client.get(self.lock_key)
        if not raw or not token:
            return
        holder = json.loads(raw)
        if holder.get("token") != token or owner_alive(holder.get("owner", "")):
            return
        if lease.release(client, self.lock_key, token):
            log.warning("beat: took over the lock of %s, which is no longer running",
                        holder.get("owner"))


def on_beat_init(sender: Any = None, **_: Any) -> None:
    """Wait as a standby until this beat holds the lock, note the holder, run the start-up
    recovery once."""
    scheduler = getattr(sender, "scheduler", None)
    if not isinstance(scheduler, Scheduler):
        return
    if scheduler.lock_key:
        scheduler.wait_for_lock()
        scheduler.record_holder()
    scheduler.app.send_task("mimikit.supervisor.recover", queue="supervisor")

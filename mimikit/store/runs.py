"""Agent runs: each step of a Planner, Worker or ``llm_eval`` run kept and published as it
happens, so a person watches a long task work and a run that is canceled or times out still
shows what it did; then the finished transcript, kept under its task or trace.
"""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from mimikit.store.keys import EVENTS_MAXLEN, Keys
from mimikit.store.retention import GRACE_SECONDS, RUNS_KEPT
from mimikit.store.writepipe import Transactions, WritePipe

LIVE_STEPS_TTL_SECONDS = 24 * 3600  # a run that died without ending leaves them this long


class RunStore:
    """The steps of the runs in progress and the transcripts of finished runs."""

    def __init__(self, redis: Redis, keys: Keys, events: Transactions) -> None:
        self.redis = redis
        self.keys = keys
        self.events = events

    def append_step(self, owner_id: str, run: dict[str, Any], step: dict[str, Any]) -> None:
        """Keep one step of run ``run`` (``{id, role, taskId}``) and publish it, together."""
        pipe = self.redis.pipeline(transaction=True)
        self.queue_step(pipe, owner_id, run, step)
        pipe.execute()

    def queue_step(self, pipe: Any, owner_id: str, run: dict[str, Any],
                   step: dict[str, Any]) -> None:
        """Queue ``append_step`` on an open transaction."""
        entry = json.dumps({"runId": run["id"], **step}, default=str)
        event = json.dumps({**run, "step": json.loads(entry)}, default=str)
        key = self.keys.live_steps(owner_id)
        pipe.rpush(key, entry)
        pipe.expire(key, LIVE_STEPS_TTL_SECONDS)
        pipe.xadd(self.keys.events, {"event": "run", "data": event}, maxlen=EVENTS_MAXLEN,
                  approximate=True)

    def live_steps(self, owner_id: str) -> list[dict[str, Any]]:
        """The steps of the run in progress of ``owner_id`` (empty when none runs)."""
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.live_steps(owner_id), 0, -1)]

    def end_live(self, owner_id: str) -> None:
        """Forget the live steps once the run's transcript is kept."""
        self.redis.delete(self.keys.live_steps(owner_id))

    def add_run(self, owner_id: str, run: dict[str, Any]) -> None:
        """Keep a run transcript (LLM messages, tool calls, usage) under its task or trace; the
        newest ``RUNS_KEPT`` are kept, for the retention after the last one."""
        self.keep_run(run, (owner_id,))

    def keep_run(self, run: dict[str, Any], owners: tuple[str, ...],
                 finished: dict[str, Any] | None = None, live_owner: str | None = None) -> None:
        """In one transaction: the run transcript under each of ``owners``, the
        ``run_finished`` log event with the fields ``finished``, and the live steps of
        ``live_owner`` forgotten (the transcript has them now)."""
        raw = json.dumps(run, default=str)

        def write(pipe: WritePipe) -> None:
            pipe.multi()
            for owner in owners:
                key = self.keys.runs(owner)
                pipe.rpush(key, raw)
                pipe.ltrim(key, -RUNS_KEPT, -1)
                pipe.expire(key, self.events.retention_seconds + GRACE_SECONDS)
            if finished is not None:
                pipe.log(self.keys, "run_finished", **finished)
            if live_owner is not None:
                pipe.delete(self.keys.live_steps(live_owner))

        self.events.transaction(write)

    def of(self, owner_id: str) -> list[dict[str, Any]]:
        """The kept transcripts of a task or a Teller trace, oldest first."""
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.runs(owner_id), 0, -1)]

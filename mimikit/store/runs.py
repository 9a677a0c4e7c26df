"""Runs in progress: each step of a Planner, Worker or ``llm_eval`` run kept and published as it
happens, so a person watches a long task work and a run that is canceled or times out still
shows what it did. A mixin of ``StateStore``; the finished transcript is ``add_run``'s.
"""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from mimikit.store.keys import EVENTS_MAXLEN, Keys

LIVE_STEPS_TTL_SECONDS = 24 * 3600  # a run that died without ending leaves them this long


class LiveRuns:
    """The steps of the runs in progress; mixed into ``StateStore``."""

    redis: Redis
    keys: Keys

    def append_step(self, owner_id: str, run: dict[str, Any], step: dict[str, Any]) -> None:
        """Keep one step of run ``run`` (``{id, role, taskId}``) and publish it, together."""
        entry = json.dumps({"runId": run["id"], **step}, default=str)
        event = json.dumps({**run, "step": json.loads(entry)}, default=str)
        key = self.keys.live_steps(owner_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.rpush(key, entry)
        pipe.expire(key, LIVE_STEPS_TTL_SECONDS)
        pipe.xadd(self.keys.events, {"event": "run", "data": event}, maxlen=EVENTS_MAXLEN,
                  approximate=True)
        pipe.execute()

    def live_steps(self, owner_id: str) -> list[dict[str, Any]]:
        """The steps of the run in progress of ``owner_id`` (empty when none runs)."""
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.live_steps(owner_id), 0, -1)]

    def end_live(self, owner_id: str) -> None:
        """Forget the live steps once the run's transcript is kept."""
        self.redis.delete(self.keys.live_steps(owner_id))

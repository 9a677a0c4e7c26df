"""Whether a beat is alive: it holds the RedBeat lock and marked a tick lately.

Read by ``mimikit status``, ``mimikit doctor`` and ``mimikit up`` (which restarts a beat that
stopped); kept apart from the scheduler so that reading it imports no Celery.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mimikit.models import utcnow
from mimikit.store.runtime import Runtime

LIVENESS_SECONDS = 30


def liveness(runtime: Runtime) -> dict[str, Any]:
    """Whether a beat holds the lock and ticked lately: ``{alive, owner, at}``."""
    raw = runtime.redis.get(runtime.keys.meta("beat"))
    if not raw:
        return {"alive": False, "owner": None, "at": None}
    holder = json.loads(raw)
    at = datetime.fromisoformat(holder["at"])
    alive = (utcnow() - at).total_seconds() < LIVENESS_SECONDS
    return {"alive": alive, "owner": holder.get("owner"), "at": holder["at"]}

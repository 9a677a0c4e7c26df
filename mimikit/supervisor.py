"""The supervisor: code-only housekeeping that runs on every tick."""

from __future__ import annotations

import logging
from typing import Any

from mimikit import dispatch
from mimikit.models import utcnow
from mimikit.runtime import Runtime
from mimikit.teller_gate import teller_state

log = logging.getLogger("mimikit.supervisor")


def tick(runtime: Runtime) -> dict[str, Any]:
    """One supervisor pass; returns what it did (for logs and tests)."""
    now = utcnow()
    runtime.redis.set(runtime.keys.meta("last_tick"), now.isoformat())
    done: dict[str, Any] = {}
    done["woke"] = wake_for_pending(runtime)
    return done


def wake_for_pending(runtime: Runtime) -> bool:
    """Wake the Teller when inputs or results wait and no Teller run is queued or running."""
    if not runtime.redis.llen(runtime.keys.inbox):
        return False
    if teller_state(runtime)["state"] != "idle":
        return False
    return dispatch.wake(runtime)

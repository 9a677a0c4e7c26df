"""Whether the LLM answers: an outage is remembered, retried with backoff, and shown in status.

While the LLM is unreachable the Teller keeps its inbox (nothing pending is dropped), says so
once per outage (and again when new messages arrive), and the supervisor wakes it again with a
growing backoff; the first successful run ends the outage.
"""

from __future__ import annotations

import json
from typing import Any

from mimikit.models import utcnow
from mimikit.store.runtime import Runtime

FIRST_BACKOFF_SECONDS = 5
MAX_BACKOFF_SECONDS = 300


def outage(runtime: Runtime) -> dict[str, Any] | None:
    """``{error, since, backoff, notifiedInputs}`` while the LLM is failing, else None."""
    raw = runtime.redis.get(runtime.keys.meta("llm_outage"))
    return json.loads(raw) if raw else None


def record_failure(runtime: Runtime, error: str, pending_inputs: int) -> bool:
    """Note a failed run; True when the user should be told (new outage or new messages)."""
    current = outage(runtime) or {"since": utcnow().isoformat(), "notifiedInputs": -1,
                                  "backoff": FIRST_BACKOFF_SECONDS / 2}
    notify = pending_inputs > current["notifiedInputs"]
    state = {"error": error, "since": current["since"],
             "backoff": min(current["backoff"] * 2, MAX_BACKOFF_SECONDS),
             "notifiedInputs": max(pending_inputs, current["notifiedInputs"])}
    pipe = runtime.redis.pipeline(transaction=True)
    pipe.set(runtime.keys.meta("llm_outage"), json.dumps(state))
    pipe.set(runtime.keys.meta("llm_backoff"), "1", ex=int(state["backoff"]))
    pipe.execute()
    return notify


def record_success(runtime: Runtime) -> None:
    runtime.redis.delete(runtime.keys.meta("llm_outage"), runtime.keys.meta("llm_backoff"))


def in_backoff(runtime: Runtime) -> bool:
    """True while the supervisor should not wake the Teller again for an LLM outage."""
    return bool(runtime.redis.exists(runtime.keys.meta("llm_backoff")))

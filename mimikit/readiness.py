"""When ``mimikit up`` may say "ready": which parts of an instance cannot take a job yet.

Ready means the first real job costs what later ones do: the web answers ``/api/health``; each
worker child has registered, which it does once warmed up (imports, prompts and tool schemas,
the LLM client, the memory index) and consuming; a beat holds the lock and has ticked since the
launch; the stored data is at this version's schema and the start-up recovery (work left from
before, the Teller woken for what waits) has finished since the launch, so the first message
never waits behind it; and where an LLM is configured, the start's reading of the roles'
prompts into its server's cache has ended (``agents.warmup``: about 75 s the first time on two
CPU cores, a second where the server holds them; the first message would wait for it), for at
most ``PROMPTS_READY_MAX_SECONDS``. Until then the parts still missing are named, so a slow
start can say what it waits for.
"""

from __future__ import annotations

import time
import urllib.request
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError

from mimikit.delivery.workers import workers
from mimikit.llm.warming import READ_AT_KEY, WARMING_KEY
from mimikit.scheduling.liveness import liveness
from mimikit.store.identity import HOSTNAME
from mimikit.store.runtime import Runtime
from mimikit.store.schema import SCHEMA_VERSION, stored_version

PROMPTS_READY_MAX_SECONDS = 180.0  # "ready" waits no longer for the prompts to be read


def web_answers(url: str) -> bool:
    """True when ``url/api/health`` answers (a 503 counts: web serves, Redis is away)."""
    try:
        with urllib.request.urlopen(f"{url}/api/health", timeout=1):
            return True
    except OSError as error:
        return getattr(error, "code", None) == 503


def missing_parts(runtime: Runtime, web_url: str, worker_pids: dict[str, int],
                  since: datetime) -> list[str]:
    """The names of the parts not ready: ``"web"``, a key of ``worker_pids`` (a worker child
    by its pid, whose worker process is the child itself), ``"beat"``, ``"schema"`` (data
    migrations not done), ``"recovery"`` (the start-up recovery of a beat of ours not done
    since ``since``), ``"llm prompts"`` (their reading not ended since ``since``), or
    ``"redis"`` when Redis does not answer."""
    missing = [] if web_answers(web_url) else ["web"]
    try:
        registered = {entry.get("pid") for entry in workers(runtime)}
        beat = liveness(runtime)
        migrated = stored_version(runtime) >= SCHEMA_VERSION
        recovered = runtime.redis.get(runtime.keys.recovered_at)
        if prompts_pending(runtime, since):
            missing.append("llm prompts")
    except RedisError:
        return [*missing, "redis"]
    missing += [name for name, pid in worker_pids.items() if pid not in registered]
    if not beat["alive"] or datetime.fromisoformat(beat["at"]) < since:
        missing.append("beat")
    if not migrated:
        missing.append("schema")
    if _beat_is_ours(beat, worker_pids) and (
            recovered is None or datetime.fromisoformat(recovered.decode()) < since):
        missing.append("recovery")
    return missing


def _beat_is_ours(beat: dict[str, Any], worker_pids: dict[str, int]) -> bool:
    """Whether the beat holding the lock runs in one of our workers (it then runs the start-up
    recovery; a beat elsewhere ran it when it started)."""
    return beat.get("owner") in {f"{HOSTNAME}:{pid}" for pid in worker_pids.values()}


def prompts_pending(runtime: Runtime, since: datetime) -> bool:
    """Whether a start of the instance at ``since`` is still to read the roles' prompts into
    the LLM server's cache, or reading them, within ``PROMPTS_READY_MAX_SECONDS``; not where no
    LLM is configured, nor where a process that started before ``since`` read them lately
    (none of this start's then does: ``agents.warmup.claim_warming``)."""
    launched = since.timestamp()
    if not runtime.settings.llm_configured or time.time() - launched > PROMPTS_READY_MAX_SECONDS:
        return False
    read_at, claimed = runtime.redis.mget(
        [runtime.keys.meta(READ_AT_KEY), runtime.keys.meta(WARMING_KEY)])
    if read_at is not None and float(read_at) >= launched:
        return False
    return claimed is None or float(claimed) >= launched

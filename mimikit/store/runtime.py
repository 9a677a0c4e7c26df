"""The per-process wiring: settings, the Redis client and the state store, built on first use.

Celery task bodies and the web app are the edges that call ``get_runtime()``; everything below
them takes these objects as arguments.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from redis import Redis

from mimikit.config import Settings, load_settings
from mimikit.store.keys import Keys
from mimikit.store.state import StateStore


@dataclass
class Runtime:
    """What one process needs to talk to its instance."""

    settings: Settings
    redis: Redis
    keys: Keys
    state: StateStore


def build_runtime(settings: Settings) -> Runtime:
    """Connect to Redis (lazily, on first command) and build the state store."""
    redis = Redis.from_url(
        settings.redis_url, health_check_interval=30, socket_keepalive=True,
        retry_on_timeout=True, socket_connect_timeout=5,
    )
    keys = Keys(settings.key_prefix)
    state = StateStore(redis, keys, settings.state_dir)
    state.heartbeat_seconds = settings.heartbeat_seconds
    state.retention_seconds = settings.retention_seconds
    return Runtime(settings=settings, redis=redis, keys=keys, state=state)


_lock = threading.Lock()
_runtime: Runtime | None = None
_pid: int | None = None


def get_runtime() -> Runtime:
    """The process's runtime; rebuilt after a fork so no socket is shared with the parent."""
    global _runtime, _pid
    with _lock:
        if _runtime is None or _pid != os.getpid():
            _runtime = build_runtime(load_settings())
            _pid = os.getpid()
        return _runtime


def reset_runtime() -> None:
    """Forget the cached runtime (settings changed, e.g. in tests)."""
    global _runtime
    with _lock:
        _runtime = None

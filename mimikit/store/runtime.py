"""The per-process wiring: settings, the Redis client and the stores, built on first use.

Celery task bodies and the web app are the edges that call ``get_runtime()``; everything below
them takes these objects as arguments.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from redis import Redis

from mimikit.config import Settings, load_settings
from mimikit.store.conversation import Conversation
from mimikit.store.eventlog import EventLog
from mimikit.store.inbox import Inbox
from mimikit.store.keys import Keys
from mimikit.store.runs import RunStore
from mimikit.store.tasks import TaskStore
from mimikit.store.triggers import TriggerStore
from mimikit.summaries import task_summary


@dataclass
class Runtime:
    """What one process needs to talk to its instance."""

    settings: Settings
    redis: Redis
    keys: Keys
    events: EventLog
    tasks: TaskStore
    triggers: TriggerStore
    conversation: Conversation
    inbox: Inbox
    runs: RunStore


def build_runtime(settings: Settings) -> Runtime:
    """Connect to Redis (lazily, on first command) and build the stores."""
    redis = Redis.from_url(
        settings.redis_url, health_check_interval=30, socket_keepalive=True,
        retry_on_timeout=True, socket_connect_timeout=5,
    )
    keys = Keys(settings.key_prefix)
    events = EventLog(redis, keys, settings.state_dir, settings.retention_seconds)
    tasks = TaskStore(redis, keys, events, task_summary, settings.heartbeat_seconds)
    inbox = Inbox(redis, keys)
    return Runtime(settings=settings, redis=redis, keys=keys, events=events, tasks=tasks,
                   triggers=TriggerStore(redis, keys, tasks.by_id),
                   conversation=Conversation(redis, keys, events, inbox), inbox=inbox,
                   runs=RunStore(redis, keys, events))


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

"""Celery settings for Mimikit, derived from the ``MIMIKIT_*`` settings (lowercase only)."""

from kombu import Queue

from mimikit.config import load_settings
from mimikit.delivery.queues import (
    BROKER_PRIORITY_LEVELS,
    QUEUES,
    ROUTES,
    SYSTEM_PRIORITY,
    queue_key_prefix,
    to_broker_priority,
)

_settings = load_settings()
_visibility_timeout = _settings.longest_task_seconds + 600

broker_url = _settings.redis_url
result_backend = _settings.redis_url
broker_connection_retry_on_startup = True
# Queues live under KEY_PREFIX too, so several instances can share one Redis.
_queue_prefix = queue_key_prefix(_settings.key_prefix)
broker_transport_options = {
    "global_keyprefix": _queue_prefix,
    "visibility_timeout": _visibility_timeout,
    "priority_steps": list(range(BROKER_PRIORITY_LEVELS)),
    "queue_order_strategy": "priority",
}
result_backend_transport_options = {"visibility_timeout": _visibility_timeout,
                                    "global_keyprefix": _queue_prefix}
result_expires = 24 * 3600

task_queues = tuple(Queue(name) for name in QUEUES)
task_default_queue = "worker"
task_routes = ROUTES
task_default_priority = to_broker_priority(5)
task_acks_late = True
task_reject_on_worker_lost = True
task_track_started = True
task_send_sent_event = True
worker_send_task_events = True
worker_prefetch_multiplier = 1
worker_cancel_long_running_tasks_on_connection_loss = False
worker_hijack_root_logger = False
include = ["mimikit.celery_tasks"]

timezone = "UTC"
enable_utc = True

beat_scheduler = "mimikit.scheduling.beat:Scheduler"
beat_max_loop_interval = 5
redbeat_redis_url = _settings.redis_url
redbeat_key_prefix = f"{_settings.key_prefix}:redbeat:"
redbeat_lock_timeout = 30
redbeat_redis_options: dict[str, object] = {}
beat_schedule = {
    "mimikit.supervisor.tick": {
        "task": "mimikit.supervisor.tick",
        "schedule": _settings.tick_seconds,
        # System priority: a backlog of Worker tasks on a shared worker must not starve it.
        "options": {"expires": max(_settings.tick_seconds * 5, 5), "priority": SYSTEM_PRIORITY},
    },
    # One batch of every pending llm_eval condition, ahead of every worker task (level 0).
    "mimikit.llm_eval_batch": {
        "task": "mimikit.llm_eval_batch",
        "schedule": _settings.llm_eval_interval,
        "options": {"queue": "worker", "priority": SYSTEM_PRIORITY,
                    "expires": _settings.llm_eval_interval},
    },
    # Memory archival and flush also run from the tick when history grows; this is the floor.
    "mimikit.memory.archive": {
        "task": "mimikit.memory.archive",
        "schedule": 6 * 3600,
        "options": {"queue": "supervisor", "priority": SYSTEM_PRIORITY},
    },
}

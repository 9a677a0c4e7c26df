"""Queue names, routes and the mapping of Mimikit priorities onto the Redis transport's levels.

Mimikit priorities run 0-10 with LARGER first. Kombu's Redis transport has levels 0-9 with
SMALLER first (a key per level, polled in order). Level 0 is reserved for system work that must
overtake every ordinary task (the batched ``llm_eval``); 10 and 9 share level 1, 1 and 0 share
level 9, every other priority has a level of its own.
"""

from __future__ import annotations

from mimikit.exceptions import InvalidValue
from mimikit.roles import ROLES

BROKER_PRIORITY_LEVELS = 10
SYSTEM_PRIORITY = 0
SUPERVISOR_QUEUE = "supervisor"
QUEUES = tuple(dict.fromkeys([*(r.queue for r in ROLES.values()), SUPERVISOR_QUEUE]))
ROUTES = {
    **{r.task_name: {"queue": r.queue} for r in ROLES.values()},
    "mimikit.supervisor.*": {"queue": "supervisor"},
    "mimikit.memory.*": {"queue": "supervisor"},
    "mimikit.triggers.*": {"queue": "supervisor"},
}


def to_broker_priority(priority: int) -> int:
    """The Redis transport level (0 first) for a Mimikit priority (0-10, 10 first)."""
    if not 0 <= priority <= 10:
        raise InvalidValue(f"priority {priority} is outside 0-10")
    return min(max(10 - priority, 1), BROKER_PRIORITY_LEVELS - 1)


def queue_key_prefix(key_prefix: str) -> str:
    """The prefix of every broker and result key of an instance (kombu's global_keyprefix)."""
    return f"{key_prefix}:celery:"


def queue_keys(queue: str, key_prefix: str) -> list[str]:
    """The Redis list keys holding one queue's messages, one per priority level."""
    sep = "\x06\x16"
    name = queue_key_prefix(key_prefix) + queue
    return [name] + [f"{name}{sep}{level}" for level in range(1, BROKER_PRIORITY_LEVELS)]

"""The version of the data layout in Redis, and how older data is brought forward at start.

Data written before versioning counts as version 1. Each migration moves the stored data one
version up; they run in order, once cluster-wide (a lease), when a worker or beat starts. Data
written by a newer version is left untouched and the process says to upgrade.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from mimikit.exceptions import ConfigError
from mimikit.store import lease
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.schema")
SCHEMA_VERSION = 4
LOCK_SECONDS = 300
Migration = Callable[[Runtime], object]


def stored_version(runtime: Runtime) -> int:
    """The version of the data in this instance's Redis (1 when it was never written)."""
    return int(runtime.redis.get(runtime.keys.meta("schema")) or 1)


def migrate(runtime: Runtime, migrations: dict[int, Migration],
            current: int = SCHEMA_VERSION) -> list[int]:
    """Run the migrations from the stored version up to ``current``; returns those run.

    Raises:
        ConfigError: The data was written by a newer version than this one knows.
    """
    key, owner = runtime.keys.meta("schema_lock"), owner_token(uuid.uuid4().hex)
    if not lease.acquire(runtime.redis, key, owner, LOCK_SECONDS, owner_alive):
        return []  # another process is migrating; it sets the version when done
    try:
        version = stored_version(runtime)
        if version > current:
            raise ConfigError(
                f"this Redis holds Mimikit data of schema version {version}, newer than this "
                f"version knows ({current}); upgrade mimikit on this machine")
        ran = []
        for target in range(version + 1, current + 1):
            migrations[target](runtime)
            runtime.redis.set(runtime.keys.meta("schema"), target)
            runtime.events.log("schema_migrated", version=target)
            log.info("stored data migrated to schema version %d", target)
            ran.append(target)
        return ran
    finally:
        lease.release(runtime.redis, key, owner)

"""The Redis broker transport of Mimikit's Celery app: kombu's, made to survive a lost Redis.

Celery 5.7 collects a broken broker connection (its client becomes None) before it closes the
consumer's channel. Closing then tries to put the worker's unacknowledged messages back through
that collected connection, fails with an ``AttributeError``, and the worker stops for good
("Unrecoverable error") instead of reconnecting when Redis is back. Here that attempt raises a
connection error, which the close ignores: the worker reconnects; the messages stay in the
unacked set, and a delivery that did not finish is sent again by Mimikit's recovery.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    """kombu's Redis channel that refuses to open a pool on a collected connection."""

    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was lost and already closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with ``Channel``."""

    Channel = Channel


def use_for_redis_urls() -> None:
    """Make ``redis://`` broker URLs use ``Transport`` in this process (the URLs stay as they
    are, so Flower and the logs show them as usual)."""
    TRANSPORT_ALIASES["redis"] = f"{__name__}:Transport"

"""The Redis broker transport of Mimikit's Celery app: kombu's, made to survive a lost Redis.

When a worker loses Redis, Celery 5.7 collects the broken connection (its client becomes None)
and then closes the consumer's channel, which puts the messages the worker had received but not
acknowledged back in their queues. Through the collected connection that fails with an
``AttributeError``, and the worker stops for good ("Unrecoverable error") instead of
reconnecting; a task that finishes afterwards fails the same way acknowledging its message on
the closed channel. Here a channel whose connection is gone keeps those messages' delivery tags
instead, and the next channel of the process, opened once Redis answers again, puts them back
(unless their task finished meanwhile): the worker reconnects, and a reserved task or Teller
run is not left behind for the visibility timeout (hours).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import RedisError

log = logging.getLogger("mimikit.delivery")
_lock = threading.Lock()
_unrestored: list[str] = []  # delivery tags a closing channel could not put back


class QoS(kombu_redis.QoS):
    """kombu's Redis QoS that, once its connection is gone, hands its unacknowledged messages
    over to the next channel, and lets acknowledgements that come too late do nothing."""

    def _gone(self) -> bool:
        connection = self.channel.connection
        return connection is None or connection.client is None

    def restore_unacked(self, client: Any = None) -> Any:
        if client is not None or not self._gone():
            return super().restore_unacked(client)
        delivered: Any = self._delivered
        with _lock:
            _unrestored.extend(delivered)
        delivered.clear()
        return None

    def ack(self, delivery_tag: str) -> None:
        if not self._gone():
            super().ack(delivery_tag)
            return
        # A task that finished after Redis came back: its message need not be put back (if it
        # already was, the redelivery of a finished task does nothing).
        with _lock:
            if delivery_tag in _unrestored:
                _unrestored.remove(delivery_tag)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if not self._gone():
            super().reject(delivery_tag, requeue=requeue)
        elif not requeue:
            self.ack(delivery_tag)


class Channel(kombu_redis.Channel):
    """kombu's Redis channel that puts back what a channel lost with Redis left behind."""

    QoS = QoS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # pings Redis: it answers from here on
        with _lock:
            tags = list(_unrestored)
            _unrestored.clear()
        if tags:
            log.warning("putting back %d message(s) received before Redis went away", len(tags))
        for done, tag in enumerate(tags):
            try:
                self.qos.restore_by_tag(tag)
            except RedisError:
                with _lock:  # Redis went away again: the next channel tries
                    _unrestored.extend(tags[done:])
                raise


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with ``Channel``."""

    Channel = Channel


def use_for_redis_urls() -> None:
    """Make ``redis://`` broker URLs use ``Transport`` in this process (the URLs stay as they
    are, so Flower and the logs show them as usual)."""
    TRANSPORT_ALIASES["redis"] = f"{__name__}:Transport"

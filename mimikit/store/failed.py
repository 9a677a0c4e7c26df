"""The Teller's inbox items that gave up after their bounded tries: kept, with why, until the
person tries one again or dismisses it.

Giving up is one transaction: the item leaves the inbox, its tries are forgotten, its record is
stored and the system message that tells the person enters the history, with their log line
and live event (``failed``); a crash leaves either all of it or none. Trying again puts the
very item back at the end of the inbox, with no tries used. A dismissed item stays, marked so:
it is not shown as waiting for a decision, and its words stay out of the models' context.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field
from redis import Redis

from mimikit.models import Message, Model, load, utcnow
from mimikit.store.conversation import Conversation
from mimikit.store.inbox import item_json, parse_item
from mimikit.store.keys import Keys
from mimikit.store.writepipe import Transactions

FailedState = Literal["failed", "dismissed"]


class FailedItem(Model):
    """An inbox item that gave up: what it was, why, and what its tries took."""

    id: str = Field(description="the inbox item's id")
    kind: str = Field(description="input, answer, result or notice")
    item: dict[str, Any] = Field(description="the inbox item as it was queued")
    preview: str = Field("", description="a few words of it, for the person")
    reason: str = Field(description="why its last pass failed, in plain words")
    detail: str = Field("", description="the last failure as the run reported it")
    tries: int = 0
    calls: int = 0
    failedAt: datetime = Field(default_factory=utcnow)
    state: FailedState = "failed"
    dismissedAt: datetime | None = None
    traceId: str | None = None
    messageId: str | None = None  # the person's message, for an input
    taskId: str | None = None  # the task, for a result
    noteId: str | None = None  # the system message that told the person


class FailedItems:
    """The items that gave up, by item id (a Redis hash of JSON records)."""

    def __init__(self, redis: Redis, keys: Keys, events: Transactions,
                 conversation: Conversation) -> None:
        self.redis, self.keys = redis, keys
        self.events, self.conversation = events, conversation

    def give_up(self, record: FailedItem, note: Message) -> bool:
        """Move item ``record.id`` from the inbox here and post ``note``, in one transaction.

        Returns False, changing nothing, when the item is no longer in the inbox.
        """
        record.noteId = note.id

        def write(pipe: Any) -> bool:
            raw = _raw_of(pipe.lrange(self.keys.inbox, 0, -1), record.id)
            if raw is None:
                return False
            pipe.multi()
            pipe.lrem(self.keys.inbox, 1, raw)
            pipe.hdel(self.keys.inbox_tries, record.id)
            pipe.hset(self.keys.inbox_failed, record.id, record.model_dump_json())
            self.conversation.queue_append(pipe, note)
            pipe.log(self.keys, "inbox_item_failed", itemId=record.id, kind=record.kind,
                     traceId=record.traceId, taskId=record.taskId, reason=record.detail[:500],
                     tries=record.tries, calls=record.calls)
            pipe.event(self.keys, "failed", {"id": record.id, "state": "failed"})
            return True

        return bool(self.events.transaction(write, self.keys.inbox))

    def retry(self, item_id: str) -> FailedItem | None:
        """Put the item back at the end of the inbox, its tries unused; None when unknown."""

        def write(pipe: Any) -> FailedItem | None:
            record = self._read(pipe, item_id)
            item = parse_item(json.dumps(record.item)) if record is not None else None
            if record is None or item is None:
                return None
            pipe.multi()
            pipe.hdel(self.keys.inbox_failed, item_id)
            pipe.hdel(self.keys.inbox_tries, item_id)
            pipe.rpush(self.keys.inbox, item_json(item))
            pipe.log(self.keys, "inbox_item_retried", itemId=item_id, kind=record.kind,
                     traceId=record.traceId, taskId=record.taskId)
            pipe.event(self.keys, "failed", {"id": item_id, "state": "retried"})
            return record

        result: FailedItem | None = self.events.transaction(write, self.keys.inbox_failed)
        return result

    def dismiss(self, item_id: str) -> FailedItem | None:
        """Mark the item dismissed (it is kept); None when unknown. One already dismissed is
        returned as it is."""

        def write(pipe: Any) -> FailedItem | None:
            record = self._read(pipe, item_id)
            if record is None or record.state == "dismissed":
                return record
            record.state, record.dismissedAt = "dismissed", utcnow()
            pipe.multi()
            pipe.hset(self.keys.inbox_failed, item_id, record.model_dump_json())
            pipe.log(self.keys, "inbox_item_dismissed", itemId=item_id, kind=record.kind,
                     traceId=record.traceId, taskId=record.taskId)
            pipe.event(self.keys, "failed", {"id": item_id, "state": "dismissed"})
            return record

        result: FailedItem | None = self.events.transaction(write, self.keys.inbox_failed)
        return result

    def get(self, item_id: str) -> FailedItem | None:
        return self._read(self.redis, item_id)

    def all(self) -> list[FailedItem]:
        """Every record, dismissed ones too, oldest first."""
        records = [load(FailedItem, raw) for raw in self.redis.hvals(self.keys.inbox_failed)]
        return sorted(records, key=lambda record: record.failedAt)

    def _read(self, client: Any, item_id: str) -> FailedItem | None:
        raw = client.hget(self.keys.inbox_failed, item_id)
        return load(FailedItem, raw) if raw else None


def _raw_of(raws: list[bytes], item_id: str) -> bytes | None:
    """The stored form of the inbox item ``item_id`` among ``raws``, if it is there."""
    for raw in raws:
        item = parse_item(raw)
        if item is not None and item.id == item_id:
            return raw
    return None

"""The conversation in the state store: history, the Teller's inbox, the pending question.

A mixin of ``StateStore``: it uses the store's Redis client, keys and transactions (whose
pipelines also queue log lines and live events: see ``writepipe``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis import Redis

from mimikit.models import Message, PendingQuestion, load
from mimikit.store.keys import EVENTS_MAXLEN, Keys

SEARCH_BATCH_MESSAGES = 200

_APPEND_MESSAGE = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
if ARGV[5] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[5]) end
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[6], '*', 'event', 'message', 'data', ARGV[3])
return 1
"""


class ConversationStore:
    """Messages, inbox and pending question; mixed into ``StateStore``."""

    redis: Redis
    keys: Keys
    transaction: Callable[..., Any]

    def append_message(self, message: Message, *, to_inbox: bool = False) -> bool:
        """Add a message to history (de-duplicated by createdAt + text); maybe to the inbox.

        Returns False, writing nothing, when the same createdAt + text is already there.
        """
        body = message.model_dump_json(exclude_none=True)
        inbox_item = json.dumps({"kind": "input", "message": json.loads(body)}) if to_inbox else ""
        keys = [self.keys.history_seen, self.keys.messages, self.keys.history,
                self.keys.inbox, self.keys.events]
        args = [message_key(message), message.id, body, message.createdAt.timestamp(),
                inbox_item, EVENTS_MAXLEN]
        return bool(self.redis.eval(_APPEND_MESSAGE, len(keys), *keys, *args))

    def system_message(self, text: str, **fields: Any) -> Message:
        message = Message(role="system", text=text, **fields)
        self.append_message(message)
        return message

    def history_count(self) -> int:
        return int(self.redis.zcard(self.keys.history))

    def recent_messages(self, count: int, offset: int = 0) -> list[Message]:
        """The ``count`` newest messages after skipping ``offset``, oldest first."""
        if count <= 0:
            return []
        ids = self.redis.zrevrange(self.keys.history, offset, offset + count - 1)
        return list(reversed(self._load_messages(ids)))

    def messages_between(self, after: datetime | None, before: datetime | None,
                         limit: int | None = None) -> list[Message]:
        """Messages with ``after <= createdAt <= before`` (inclusive), oldest first."""
        low = after.timestamp() if after else "-inf"
        high = before.timestamp() if before else "+inf"
        if limit is None:
            return self._load_messages(self.redis.zrangebyscore(self.keys.history, low, high))
        # The newest ``limit`` of the range, read from its end (paging back stays cheap).
        ids = self.redis.zrevrangebyscore(self.keys.history, high, low, start=0, num=limit)
        return self._load_messages(list(reversed(ids)))

    def search_messages(self, text: str, limit: int, max_scanned: int
                        ) -> tuple[list[Message], int]:
        """Messages whose text contains ``text`` (case-insensitive), newest first.

        Only the ``max_scanned`` newest messages are looked at, so the work stays bounded
        however long the history is.

        Returns:
            Up to ``limit`` matching messages, and how many messages were looked at.
        """
        needle = text.casefold()
        found: dict[str, Message] = {}  # by id: a message appended meanwhile shifts the ranks
        scanned = 0
        while scanned < max_scanned and len(found) < limit:
            last = min(scanned + SEARCH_BATCH_MESSAGES, max_scanned) - 1
            ids = self.redis.zrevrange(self.keys.history, scanned, last)
            if not ids:
                break
            scanned += len(ids)
            for message in self._load_messages(ids):
                if needle in message.text.casefold() and len(found) < limit:
                    found.setdefault(message.id, message)
        return list(found.values()), scanned

    def _load_messages(self, ids: list[bytes]) -> list[Message]:
        if not ids:
            return []
        raws = self.redis.hmget(self.keys.messages, ids)
        return [load(Message, raw) for raw in raws if raw]

    def push_inbox(self, item: dict[str, Any]) -> None:
        """Queue an item for the next Teller run (input, result, answer or notice)."""
        self.redis.rpush(self.keys.inbox, json.dumps(item, default=str))

    def read_inbox(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.redis.lrange(self.keys.inbox, 0, -1)]

    def ack_inbox(self, count: int) -> None:
        """Drop the first ``count`` inbox items (those a Teller run has handled)."""
        if count > 0:
            self.redis.ltrim(self.keys.inbox, count, -1)

    def get_question(self) -> PendingQuestion | None:
        raw = self.redis.get(self.keys.question)
        return load(PendingQuestion, raw) if raw else None

    def set_question(self, question: PendingQuestion) -> None:
        body = question.model_dump_json(exclude_none=True)

        def write(pipe: Any) -> None:
            pipe.multi()
            pipe.set(self.keys.question, body)
            pipe.log(self.keys, "question_asked", traceId=question.traceId,
                     questionId=question.id)
            pipe.event(self.keys, "question", {"question": json.loads(body)})

        self.transaction(write)

    def resolve_question(self, answer: str, source: str, question_id: str | None = None) -> bool:
        """Clear the pending question and queue the answer for the Teller, atomically.

        Returns False when no question (or not that one) is pending.
        """

        def write(pipe: Any) -> bool:
            raw = pipe.get(self.keys.question)
            if raw is None:
                return False
            question = load(PendingQuestion, raw)
            if question_id and question.id != question_id:
                return False
            pipe.multi()
            pipe.delete(self.keys.question)
            item = {"kind": "answer", "question": question.question, "answer": answer,
                    "source": source, "traceId": question.traceId}
            pipe.rpush(self.keys.inbox, json.dumps(item))
            pipe.log(self.keys, "question_answered", traceId=question.traceId, source=source)
            pipe.event(self.keys, "question", {"question": None})
            return True

        return bool(self.transaction(write, self.keys.question))


def message_key(message: Message) -> str:
    """The natural de-duplication key of a message: createdAt + text."""
    raw = f"{message.createdAt.isoformat()}\n{message.text}".encode()
    return hashlib.sha1(raw).hexdigest()

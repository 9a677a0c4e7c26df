"""The conversation in Redis: the history of messages and the pending question.

A message the person sends enters the history and the Teller's inbox in one step; an answer
to the question clears it and enters the inbox in one transaction (with its log line and live
event, see ``eventlog``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Any

from redis import Redis

from mimikit.models import Message, PendingQuestion, load
from mimikit.store.inbox import AnswerItem, Inbox, InputItem, item_json
from mimikit.store.keys import EVENTS_MAXLEN, Keys
from mimikit.store.writepipe import Transactions

SEARCH_BATCH_MESSAGES = 200
# Messages read before, kept by id: a message never changes once written, so a run reads only
# the bodies of those it has not seen (the history a run shows is mostly the last run's).
LOADED_MESSAGES_KEPT = 500

_APPEND_MESSAGE = """
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 0 end
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
if ARGV[5] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[5]) end
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[6], '*', 'event', 'message', 'data', ARGV[3])
return 1
"""


class Conversation:
    """The messages and the pending question of one instance."""

    def __init__(self, redis: Redis, keys: Keys, events: Transactions, inbox: Inbox) -> None:
        self.redis = redis
        self.keys = keys
        self.events = events
        self.inbox = inbox
        self._loaded: OrderedDict[bytes, Message] = OrderedDict()
        self._loaded_lock = threading.Lock()

    def append(self, message: Message, *, to_inbox: bool = False) -> bool:
        """Add a message to history (de-duplicated by id, and by createdAt + text); maybe to the
        inbox.

        Returns False, writing nothing, when the same id, or createdAt + text, is already there.
        """
        return bool(self.redis.eval(*self._append_call(message, to_inbox)))

    def queue_append(self, pipe: Any, message: Message) -> None:
        """Queue ``append(message)`` into an open transaction (it commits with the rest)."""
        pipe.eval(*self._append_call(message, False))

    def _append_call(self, message: Message, to_inbox: bool) -> list[Any]:
        """The ``EVAL`` arguments that append ``message`` (and its inbox item)."""
        body = message.model_dump_json(exclude_none=True)
        inbox_item = ""
        if to_inbox:
            item = InputItem(message=json.loads(body), traceId=message.traceId)
            inbox_item = item_json(item)
        keys = [self.keys.history_seen, self.keys.messages, self.keys.history,
                self.keys.inbox, self.keys.events]
        args = [message_key(message), message.id, body, message.createdAt.timestamp(),
                inbox_item, EVENTS_MAXLEN]
        return [_APPEND_MESSAGE, len(keys), *keys, *args]

    def system(self, text: str, **fields: Any) -> Message:
        """Add a system message (task created, failed, an error ...) to the history."""
        message = Message(role="system", text=text, **fields)
        self.append(message)
        return message

    def count(self) -> int:
        return int(self.redis.zcard(self.keys.history))

    def recent(self, count: int, offset: int = 0) -> list[Message]:
        """The ``count`` newest messages after skipping ``offset``, oldest first."""
        if count <= 0:
            return []
        ids = self.redis.zrevrange(self.keys.history, offset, offset + count - 1)
        return list(reversed(self._load_messages(ids)))

    def recent_of_all(self, count: int) -> tuple[list[Message], int]:
        """The ``count`` newest messages, oldest first, and how many the history holds (read
        together)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrevrange(self.keys.history, 0, count - 1)
        pipe.zcard(self.keys.history)
        ids, total = pipe.execute()
        return list(reversed(self._load_messages(ids))), int(total)

    def between(self, after: datetime | None, before: datetime | None,
                         limit: int | None = None) -> list[Message]:
        """Messages with ``after <= createdAt <= before`` (inclusive), oldest first."""
        low = after.timestamp() if after else "-inf"
        high = before.timestamp() if before else "+inf"
        if limit is None:
            return self._load_messages(self.redis.zrangebyscore(self.keys.history, low, high))
        # The newest ``limit`` of the range, read from its end (paging back stays cheap).
        ids = self.redis.zrevrangebyscore(self.keys.history, high, low, start=0, num=limit)
        return self._load_messages(list(reversed(ids)))

    def search(self, text: str, limit: int, max_scanned: int
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
        """The messages of ``ids`` that exist, in order (each a copy of its own)."""
        with self._loaded_lock:
            missing = [i for i in ids if i not in self._loaded]
        read = dict(zip(missing, self.redis.hmget(self.keys.messages, missing), strict=True)) \
            if missing else {}
        with self._loaded_lock:
            for message_id, raw in read.items():
                if raw:
                    self._loaded[message_id] = load(Message, raw)
            found = []
            for message_id in ids:
                message = self._loaded.get(message_id)
                if message is not None:
                    self._loaded.move_to_end(message_id)
                    found.append(message.model_copy())
            while len(self._loaded) > LOADED_MESSAGES_KEPT:
                self._loaded.popitem(last=False)
        return found

    def question(self) -> PendingQuestion | None:
        """The question waiting for the person's answer, if any."""
        raw = self.redis.get(self.keys.question)
        return load(PendingQuestion, raw) if raw else None

    def ask(self, question: PendingQuestion) -> None:
        """Make ``question`` the pending question (the page shows it at once)."""
        body = question.model_dump_json(exclude_none=True)

        def write(pipe: Any) -> None:
            pipe.multi()
            pipe.set(self.keys.question, body)
            pipe.log(self.keys, "question_asked", traceId=question.traceId,
                     questionId=question.id)
            pipe.event(self.keys, "question", {"question": json.loads(body)})

        self.events.transaction(write)

    def resolve(self, answer: str, source: str, question_id: str | None = None,
                message: Message | None = None) -> bool:
        """Clear the pending question and queue the answer for the Teller, atomically (with
        the ``message`` it was typed as in the chat box, if it was).

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
            self.inbox.queue_push(pipe, AnswerItem(
                question=question.question, answer=answer, source=source,
                questionId=question.id, traceId=question.traceId, taskId=question.taskId,
                options=question.options,
                message=None if message is None else message.model_dump(mode="json",
                                                                         exclude_none=True)))
            pipe.log(self.keys, "question_answered", traceId=question.traceId, source=source)
            pipe.event(self.keys, "question", {"question": None})
            return True

        return bool(self.events.transaction(write, self.keys.question))


    def withdraw(self, question_id: str) -> bool:
        """Close the pending question ``question_id`` unanswered (a newer one takes its
        place); False when it is not the one pending."""

        def write(pipe: Any) -> bool:
            raw = pipe.get(self.keys.question)
            if raw is None or load(PendingQuestion, raw).id != question_id:
                return False
            pipe.multi()
            pipe.delete(self.keys.question)
            pipe.log(self.keys, "question_withdrawn", questionId=question_id)
            pipe.event(self.keys, "question", {"question": None})
            return True

        return bool(self.events.transaction(write, self.keys.question))


def message_key(message: Message) -> str:
    """The natural de-duplication key of a message: createdAt + text."""
    raw = f"{message.createdAt.isoformat()}\n{message.text}".encode()
    return hashlib.sha1(raw).hexdigest()

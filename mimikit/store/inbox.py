"""The Teller's inbox: what waits for its next pass, as typed items acknowledged by id.

An item leaves the inbox only when a pass acknowledges it by its id (never by position), so an
item that arrives while a pass runs is never acknowledged unhandled; or when it gives up after
its bounded tries (``store.failed``).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from redis import Redis

from mimikit.models import Model, new_id
from mimikit.store.keys import Keys

log = logging.getLogger("mimikit.inbox")


class _Item(Model):
    id: str = Field(default_factory=lambda: new_id("in"))
    traceId: str | None = None


class InputItem(_Item):
    """A message the person sent."""

    kind: Literal["input"] = "input"
    message: dict[str, Any]


class ResultItem(_Item):
    """A finished task the person should hear of."""

    kind: Literal["result"] = "result"
    taskId: str
    role: str
    status: str
    # The dependents that will not run because of this outcome, told in the same report.
    retired: list[str] = Field(default_factory=list)


TYPED = "chat"  # the source of an answer typed in the chat box (the card's is "user")


class AnswerItem(_Item):
    """The answer to the pending question (typed by the person, a default, or a timeout)."""

    kind: Literal["answer"] = "answer"
    question: str
    answer: str
    source: str
    questionId: str | None = None
    taskId: str | None = None  # the Planner task that asked (a needs_input)
    options: list[str] | None = None  # the question's, to ask it again
    message: dict[str, Any] | None = None  # typed in the chat box: the message it was typed as


class NoticeItem(_Item):
    """Something the Teller should know of (a task canceled, a trigger paused ...)."""

    kind: Literal["notice"] = "notice"
    text: str
    taskId: str | None = None


InboxItem = Annotated[InputItem | ResultItem | AnswerItem | NoticeItem,
                      Field(discriminator="kind")]
_ITEM: TypeAdapter[InboxItem] = TypeAdapter(InboxItem)

# Removes the items whose id is one of ARGV, wherever they are in the list, and forgets the
# failed passes they were part of (hash KEYS[2]).
_ACK = """
local wanted = {}
for i = 1, #ARGV do
  wanted[ARGV[i]] = true
  redis.call('HDEL', KEYS[2], ARGV[i])
end
local removed = 0
for _, raw in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local ok, item = pcall(cjson.decode, raw)
  if ok and type(item) == 'table' and wanted[item['id']] then
    removed = removed + redis.call('LREM', KEYS[1], 1, raw)
  end
end
return removed
"""


# Gives every item written before items had ids one (ARGV[1] + its position), and the trace of
# its message at the top level.
_NAME_LEGACY = """
local changed = 0
for i, raw in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local ok, item = pcall(cjson.decode, raw)
  if ok and type(item) == 'table' and item['id'] == nil then
    item['id'] = ARGV[1] .. i
    if item['traceId'] == nil and type(item['message']) == 'table' then
      item['traceId'] = item['message']['traceId']
    end
    redis.call('LSET', KEYS[1], i - 1, cjson.encode(item))
    changed = changed + 1
  end
end
return changed
"""


def parse_item(raw: str | bytes) -> InboxItem | None:
    """An item as stored, or None when it cannot be read (it is logged)."""
    try:
        return _ITEM.validate_json(raw, context={"stored": True})
    except ValidationError as error:
        log.error("unreadable inbox item %r: %s", raw[:200], error)
        return None


def item_json(item: InboxItem) -> str:
    return item.model_dump_json(exclude_none=True)


class Inbox:
    """The items waiting for the Teller, oldest first."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys

    def push(self, item: InboxItem) -> None:
        """Queue an item for the next Teller pass."""
        self.redis.rpush(self.keys.inbox, item_json(item))

    def queue_push(self, pipe: Any, item: InboxItem) -> None:
        """Queue ``push(item)`` into an open transaction."""
        pipe.rpush(self.keys.inbox, item_json(item))

    def read(self) -> list[InboxItem]:
        """The items waiting, oldest first; one that cannot be read is logged and removed (it
        would otherwise wake the Teller for ever)."""
        items = []
        for raw in self.redis.lrange(self.keys.inbox, 0, -1):
            item = parse_item(raw)
            if item is None:
                self.redis.lrem(self.keys.inbox, 1, raw)
            else:
                items.append(item)
        return items

    def peek(self) -> list[InboxItem]:
        """The items waiting, oldest first, changing nothing (an unreadable one is skipped)."""
        parsed = (parse_item(raw) for raw in self.redis.lrange(self.keys.inbox, 0, -1))
        return [item for item in parsed if item is not None]

    def size(self) -> int:
        return int(self.redis.llen(self.keys.inbox))

    def ack(self, ids: list[str]) -> int:
        """Remove the items with these ids (those a pass has handled) and forget their failed
        passes; returns how many were removed."""
        if not ids:
            return 0
        return int(self.redis.eval(_ACK, 2, self.keys.inbox, self.keys.inbox_tries, *ids))

    def name_legacy_items(self) -> int:
        """Give the items stored before items had ids an id, and their trace at the top level
        (schema version 4); returns how many were changed."""
        prefix = new_id("in") + "-"
        return int(self.redis.eval(_NAME_LEGACY, 1, self.keys.inbox, prefix))

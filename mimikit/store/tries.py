"""How the Teller's passes went for each inbox item: the failed passes it was part of, the LLM
calls those passes took, the passes the model never answered, and the last reason.

Counted atomically in one Redis hash (a Lua script adds to every item of a pass at once, and
drops the journal of that pass in the same step), so a crash never loses a try or counts one
twice; an item's entry goes when the item is acknowledged (``Inbox.ack``) or gives up
(``store.failed``).
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import Field
from redis import Redis

from mimikit.models import Model, utcnow
from mimikit.store.keys import Keys, as_text

# Adds to the entry of each id ARGV[6..]: ARGV[1] tries, ARGV[2] stalls, ARGV[3] calls; the
# reason ARGV[4] and the time ARGV[5] replace the last ones; deletes KEYS[2] (the journal of
# the pass that was counted), when given. Returns the entries as stored.
_COUNT = """
if KEYS[2] then redis.call('DEL', KEYS[2]) end
local stored = {}
for i = 6, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  local entry = {}
  if raw then entry = cjson.decode(raw) end
  entry['tries'] = (tonumber(entry['tries']) or 0) + tonumber(ARGV[1])
  entry['stalls'] = (tonumber(entry['stalls']) or 0) + tonumber(ARGV[2])
  entry['calls'] = (tonumber(entry['calls']) or 0) + tonumber(ARGV[3])
  entry['reason'] = ARGV[4]
  entry['at'] = ARGV[5]
  local encoded = cjson.encode(entry)
  redis.call('HSET', KEYS[1], ARGV[i], encoded)
  table.insert(stored, encoded)
end
return stored
"""

# Adds the message ids ARGV[2..] to the ``hidden`` list of the entry of the item ARGV[1].
_HIDE = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local entry = {}
if raw then entry = cjson.decode(raw) end
local hidden = entry['hidden'] or {}
local known = {}
for _, id in ipairs(hidden) do known[id] = true end
for i = 2, #ARGV do
  if not known[ARGV[i]] then table.insert(hidden, ARGV[i]); known[ARGV[i]] = true end
end
entry['hidden'] = hidden
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
"""


class Tries(Model):
    """One item's failed passes so far."""

    tries: int = Field(0, ge=0, description="failed passes it was part of")
    stalls: int = Field(0, ge=0, description="passes the model never answered (no try used)")
    calls: int = Field(0, ge=0, description="LLM answers its failed passes took")
    reason: str = ""
    at: datetime | None = None
    hidden: list[str] = Field(default_factory=list,
                              description="messages its passes are not shown again: earlier "
                                          "replies a failed pass said again word for word")


class ItemTries:
    """The ``Tries`` of the items in the Teller's inbox, by item id."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.key = keys.inbox_tries

    def count(self, ids: list[str], reason: str, *, tries: int = 0, stalls: int = 0,
              calls: int = 0, journal: str | None = None) -> dict[str, Tries]:
        """Add ``tries``, ``stalls`` and ``calls`` to each of ``ids`` and note ``reason``, and
        delete the key ``journal`` (the counted pass's), in one atomic step; returns each entry
        as it now stands."""
        keys = [self.key, journal] if journal else [self.key]
        stored = self.redis.eval(_COUNT, len(keys), *keys, tries, stalls, calls, reason[:2000],
                                 utcnow().isoformat(), *ids)
        return {item_id: Tries.model_validate_json(raw)
                for item_id, raw in zip(ids, stored, strict=True)}

    def hide(self, ids: list[str], message_ids: list[str]) -> None:
        """Keep ``message_ids`` out of the later passes of each of ``ids``."""
        if message_ids:
            for item_id in ids:
                self.redis.eval(_HIDE, 1, self.key, item_id, *message_ids)

    def of(self, ids: list[str]) -> dict[str, Tries]:
        """The entries of those of ``ids`` that failed a pass."""
        if not ids:
            return {}
        raws = self.redis.hmget(self.key, ids)
        return {item_id: Tries.model_validate_json(raw)
                for item_id, raw in zip(ids, raws, strict=True) if raw}

    def all(self) -> dict[str, Tries]:
        """Every entry, by item id."""
        return {as_text(item_id): Tries.model_validate(json.loads(raw))
                for item_id, raw in self.redis.hgetall(self.key).items()}

    def forget(self, ids: list[str]) -> None:
        """Drop the entries of ``ids`` (items that left the inbox another way)."""
        if ids:
            self.redis.hdel(self.key, *ids)

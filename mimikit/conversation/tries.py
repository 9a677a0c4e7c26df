"""Bounded tries for the Teller's inbox items (messages, answers, task results, notices).

An item is part of at most ``MAX_TRIES`` failed passes, and its failed passes take at most
``max_calls`` LLM answers (``MAX_TRIES`` x ``MIMIKIT_TELLER_MAX_STEPS``: 12 by default); then
it gives up (``conversation.failed``): it leaves the inbox, the person is told once why, and
can try it again or dismiss it. New items go first: an item that failed a pass waits until
every newer one is answered, and is then tried again alone, so one item the model cannot
answer never makes another fail.

Why two tries: a pass already corrects an unusable answer until the step limit before it
fails, so an item that failed a whole pass, and then a second one alone, will not be answered
by a third; a glitch that spoilt a pass shared with a bad item still gets its second pass.

An LLM outage (unreachable, 5xx, 429) is not the item's fault: it counts nothing, and items
held back by one are answered together when the model is back (``conversation.outage``). A
pass the model never answered at all before its deadline counts no try either (the model may
be overloaded), but its items wait behind new ones like failed ones.
"""

from __future__ import annotations

import time

from mimikit.conversation import failed
from mimikit.conversation.failed import INTERNAL_ERROR
from mimikit.conversation.gate import RETRY_PAUSE_SECONDS
from mimikit.models import load
from mimikit.store.failed import FailedItem
from mimikit.store.inbox import InboxItem, InputItem, parse_item
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.store.tries import ItemTries, Tries

MAX_TRIES = 2
PAUSE_POLL_SECONDS = 0.1


def item_tries(runtime: Runtime) -> ItemTries:
    return ItemTries(runtime.redis, runtime.keys)


def max_calls(runtime: Runtime) -> int:
    """The most LLM answers the failed passes of one item may take."""
    return runtime.settings.max_steps_for("teller") * MAX_TRIES


def next_batch(runtime: Runtime, waiting: list[InboxItem]) -> list[InboxItem]:
    """The items of the next pass, from ``waiting`` (oldest first): every item that has not
    failed a pass; when there is none, the oldest that did, alone."""
    tried = item_tries(runtime).of([item.id for item in waiting])
    fresh = [item for item in waiting if item.id not in tried]
    return fresh or waiting[:1]


def within_bounds(runtime: Runtime, items: list[InboxItem]) -> list[InboxItem]:
    """``items`` but those out of tries or calls, which give up now (a crash may have come
    between their last failed pass and their giving up)."""
    tried = item_tries(runtime).of([item.id for item in items])
    spent = {item.id for item in items if _spent(runtime, tried.get(item.id))}
    for item in items:
        if item.id in spent:
            failed.give_up(runtime, item, tried[item.id], tried[item.id].reason)
    return [item for item in items if item.id not in spent]


def count_failure(runtime: Runtime, items: list[InboxItem], detail: str, calls: int,
                  journal: str | None = None) -> list[str]:
    """A pass over ``items`` failed (``detail`` says why) after ``calls`` LLM answers: each
    item uses a try (and the pass's ``journal`` key goes, in the same step), and those out of
    tries or calls give up. Returns the ids that gave up."""
    tried = item_tries(runtime).count([item.id for item in items], detail, tries=1, calls=calls,
                                      journal=journal)
    return [item.id for item in items if _spent(runtime, tried[item.id])
            and failed.give_up(runtime, item, tried[item.id], detail)]


def count_stall(runtime: Runtime, items: list[InboxItem], detail: str,
                journal: str | None = None) -> None:
    """A pass over ``items`` that the model never answered: no try is used, but they wait
    behind new items from now on (the pass's ``journal`` key goes, in the same step)."""
    item_tries(runtime).count([item.id for item in items], detail, stalls=1, journal=journal)


def never_answered(detail: str, calls: int) -> bool:
    """Whether a failed pass ended before the model answered at all (not an internal error)."""
    return calls == 0 and not detail.startswith(INTERNAL_ERROR)


def pause_before_retry(runtime: Runtime, seconds: float = RETRY_PAUSE_SECONDS) -> None:
    """Wait ``seconds`` before an item that failed is tried again, unless a new item arrives
    (it goes first, at once) or nothing is left to try."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        waiting = runtime.inbox.peek()
        tried = item_tries(runtime).of([item.id for item in waiting])
        if not waiting or any(item.id not in tried for item in waiting):
            return
        time.sleep(PAUSE_POLL_SECONDS)


def held_back(runtime: Runtime) -> set[str]:
    """The ids of the messages kept out of the models' context: the person's messages waiting
    to be tried again after a failed pass, and those that gave up (dismissed ones too); and the
    earlier replies a failed pass of a waiting item said again (``hide_copies``). A message the
    model cannot answer must not spoil the passes of the others, nor a reply it copies the
    pass that answers its message again."""
    keys = runtime.keys
    pipe = runtime.redis.pipeline(transaction=False)  # the three read in one round trip
    pipe.hgetall(keys.inbox_tries)
    pipe.lrange(keys.inbox, 0, -1)
    pipe.hvals(keys.inbox_failed)
    entries, inbox, records = pipe.execute()
    tried = {as_text(item_id): Tries.model_validate_json(raw) for item_id, raw in entries.items()}
    waiting = [item for item in map(parse_item, inbox) if item is not None and item.id in tried]
    said = {str(item.message.get("id")) for item in waiting if isinstance(item, InputItem)}
    copies = {message_id for item in waiting for message_id in tried[item.id].hidden}
    gone = {record.messageId for record in (load(FailedItem, raw) for raw in records)
            if record.messageId}
    return said | copies | gone


def hide_copies(runtime: Runtime, items: list[InboxItem], replies: list[str]) -> None:
    """Keep the earlier ``replies`` that a failed pass over ``items`` said again out of their
    next passes (until they are answered or give up)."""
    item_tries(runtime).hide([item.id for item in items], replies)


def spending(runtime: Runtime) -> dict[str, object]:
    """The bounds and what each item that failed a pass took so far (``GET /api/usage``)."""
    waiting = {item.id: item for item in runtime.inbox.peek()}
    rows: list[dict[str, object]] = [
        {"id": item_id, "state": "retrying", "kind": waiting[item_id].kind,
         "traceId": waiting[item_id].traceId, "tries": entry.tries, "stalls": entry.stalls,
         "calls": entry.calls, "reason": failed.plain_reason(entry.reason)}
        for item_id, entry in item_tries(runtime).all().items() if item_id in waiting]
    rows += [{"id": record.id, "state": record.state, "kind": record.kind,
              "traceId": record.traceId, "tries": record.tries, "calls": record.calls,
              "reason": record.reason} for record in failed.failed_items(runtime).all()]
    return {"maxTries": MAX_TRIES, "maxCalls": max_calls(runtime), "items": rows}


def _spent(runtime: Runtime, tried: Tries | None) -> bool:
    return tried is not None and (tried.tries >= MAX_TRIES or tried.calls >= max_calls(runtime))

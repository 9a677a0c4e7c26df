"""Inbox items that could not be answered: given up with one system message that says why in
plain words, then tried again or dismissed by the person (the page, ``mimikit failed``, the
API ``/api/inbox/failed``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mimikit.conversation.gate import wake
from mimikit.exceptions import NotFound
from mimikit.models import Message
from mimikit.store.failed import FailedItem, FailedItems
from mimikit.store.inbox import AnswerItem, InboxItem, InputItem, ResultItem, item_json
from mimikit.store.runtime import Runtime
from mimikit.store.tries import Tries

PREVIEW_CHARS = 80
REASON_CHARS = 300
INTERNAL_ERROR = "internal error: "
# What a model's unusable answers were, in words (the kinds of ``llm.corrections``).
_UNUSABLE = {"empty": "it answered with nothing", "plain": "it wrote text where a call was needed",
             "promise": "it promised work it never handed over",
             "unreadable": "its calls could not be read", "cut": "its answer was cut off"}
_PLAIN: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"^the model's answers could not be used \((\w+), (\d+) times\)"),
     lambda m: f"the model gave no usable answer ({_UNUSABLE.get(m[1], m[1])}, "
               f"{m[2]} times in a row)"),
    (re.compile(r"^step limit of (\d+) reached"),
     lambda m: f"the model used all {m[1]} steps of a Teller run without replying"),
    (re.compile(r"^timed out after ([\d.]+) s"),
     lambda m: f"the model did not finish within {m[1]} s (MIMIKIT_TELLER_TIMEOUT)"),
    (re.compile(r"^the model answered nothing the user could read"),
     lambda m: "the model's answer had nothing in it for you to read"),
    (re.compile(r"^internal error: (.*)", re.S), lambda m: f"an internal error ({m[1]})"),
]


def failed_items(runtime: Runtime) -> FailedItems:
    """The store of the items that gave up."""
    return FailedItems(runtime.redis, runtime.keys, runtime.events, runtime.conversation)


def plain_reason(detail: str) -> str:
    """Why a pass failed, in words a person reads (``detail`` is what the run reported)."""
    for pattern, words in _PLAIN:
        found = pattern.match(detail)
        if found:
            return str(words(found))[:REASON_CHARS]
    return (detail or "no reply came").strip()[:REASON_CHARS]


def give_up(runtime: Runtime, item: InboxItem, tried: Tries, detail: str) -> bool:
    """Take ``item`` out of the inbox for good (kept among the failed items) and tell the
    person once; False when it had left the inbox already."""
    record = FailedItem(id=item.id, kind=item.kind, item=json.loads(item_json(item)),
                        preview=preview(runtime, item), reason=plain_reason(detail),
                        detail=detail[:2000], tries=tried.tries, calls=tried.calls,
                        traceId=item.traceId,
                        messageId=item.message.get("id") if isinstance(item, InputItem) else None,
                        taskId=item.taskId if isinstance(item, ResultItem | AnswerItem) else None)
    note = Message(role="system", text=note_text(record), traceId=item.traceId,
                   taskId=record.taskId, failedItem=item.id)
    return failed_items(runtime).give_up(record, note)


def preview(runtime: Runtime, item: InboxItem) -> str:
    """A few words of ``item`` that let the person recognise it."""
    if isinstance(item, InputItem):
        said = str(item.message.get("text", ""))
    elif isinstance(item, AnswerItem):
        said = item.answer or "(no answer)"
    elif isinstance(item, ResultItem):
        task = runtime.tasks.get(item.taskId)
        said = (task.title or task.prompt) if task is not None else item.taskId
    else:
        said = item.text
    flat = " ".join(said.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS - 1] + "…"


def note_text(record: FailedItem) -> str:
    """The system message that tells the person an item gave up, and what they can do."""
    what = {"input": f"Your message “{record.preview}” could not be answered",
            "answer": f"Your answer “{record.preview}” could not be passed on",
            "result": f"The result of task {record.taskId} (“{record.preview}”) could not be "
                      "reported"}.get(record.kind, f"A notice (“{record.preview}”) could not be "
                                                  "passed on")
    return (f"{what}: {record.reason}. Try it again or dismiss it: the buttons here, or "
            f"`mimikit failed retry {record.id}` / `mimikit failed dismiss {record.id}`.")


def retry(runtime: Runtime, item_id: str) -> FailedItem:
    """Put a failed item back in the Teller's inbox, with its tries unused, and wake the Teller.

    Raises:
        NotFound: No item with that id gave up.
    """
    record = failed_items(runtime).retry(item_id)
    if record is None:
        raise NotFound(_unknown(item_id))
    wake(runtime)
    return record


def dismiss(runtime: Runtime, item_id: str) -> tuple[FailedItem, bool]:
    """Dismiss a failed item (it is kept, marked dismissed); returns it, and False when it was
    dismissed already.

    Raises:
        NotFound: No item with that id gave up.
    """
    before = failed_items(runtime).get(item_id)
    record = failed_items(runtime).dismiss(item_id)
    if record is None or before is None:
        raise NotFound(_unknown(item_id))
    return record, before.state != "dismissed"


def listing(runtime: Runtime, include_dismissed: bool = False) -> list[dict[str, Any]]:
    """The failed items as the API and ``mimikit failed list`` show them, oldest first."""
    return [record.model_dump(mode="json", exclude={"item"})
            for record in failed_items(runtime).all()
            if include_dismissed or record.state == "failed"]


def _unknown(item_id: str) -> str:
    return (f"no failed item with id {item_id!r}; `mimikit failed list` (GET /api/inbox/failed) "
            "lists them")

"""The dynamic context of a Teller or Planner run: history and memory within their budgets."""

from __future__ import annotations

import logging

from mimikit.conversation.tries import held_back
from mimikit.memory.inject import extract_keywords, format_history, format_memory, select_history
from mimikit.memory.service import index_for
from mimikit.models import Message
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.agents")
HISTORY_WINDOW = 60
# The history shown begins at a message whose place in the conversation is a multiple of this:
# it stays the same for that many turns, so a server keeps the prompt up to its end cached.
HISTORY_STEP = 10


def context_sections(runtime: Runtime, pending_texts: list[str],
                     exclude_ids: set[str] | None = None,
                     roles: tuple[str, ...] | None = None) -> list[str]:
    """``## History`` and ``## Memory`` blocks (either may be absent when empty), in that order
    (the history changes least from one run to the next, and goes first for a server's prompt
    cache); ``roles``: the messages of only these roles in the history.

    The history leaves out ``exclude_ids``, the messages held back after a failed pass or
    given up (``tries.held_back``), and the notes that say one gave up: words the model could
    not answer must not spoil another run.
    """
    recent = runtime.conversation.recent(HISTORY_WINDOW)
    hidden = (exclude_ids or set()) | held_back(runtime)
    shown = [m for m in recent if m.id not in hidden and m.failedItem is None
             and (roles is None or m.role in roles)]
    sections = []
    history = _anchored(select_history(shown), recent, runtime.conversation.count())
    if history:
        sections.append("## History\n" + format_history(history))
    keywords = extract_keywords(pending_texts, shown)
    if keywords:
        hits = index_for(runtime.settings).search(" ".join(keywords), limit=5)
        memory = format_memory(hits)
        if memory:
            sections.append(memory)
    return sections


def _anchored(chosen: list[Message], recent: list[Message], total: int) -> list[Message]:
    """``chosen`` from its first message whose place in the whole conversation (of ``total``
    messages, ``recent`` its newest) is a multiple of ``HISTORY_STEP``."""
    first = total - len(recent)
    place = {message.id: first + index for index, message in enumerate(recent)}
    if len(chosen) <= HISTORY_STEP:
        return chosen
    start = -(-place.get(chosen[0].id, 0) // HISTORY_STEP) * HISTORY_STEP
    return [message for message in chosen if place.get(message.id, start) >= start]

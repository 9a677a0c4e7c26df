"""The dynamic context of a Teller or Planner run: history and memory within their budgets."""

from __future__ import annotations

import logging

from mimikit.conversation.tries import held_back
from mimikit.memory.inject import extract_keywords, format_history, format_memory, select_history
from mimikit.memory.service import index_for
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.agents")
HISTORY_WINDOW = 60


def context_sections(runtime: Runtime, pending_texts: list[str],
                     exclude_ids: set[str] | None = None,
                     roles: tuple[str, ...] | None = None) -> list[str]:
    """``## Memory`` and ``## History`` blocks (either may be absent when empty); ``roles``:
    the messages of only these roles in the history.

    The history leaves out ``exclude_ids``, the messages held back after a failed pass or
    given up (``tries.held_back``), and the notes that say one gave up: words the model could
    not answer must not spoil another run.
    """
    recent = runtime.conversation.recent(HISTORY_WINDOW)
    hidden = (exclude_ids or set()) | held_back(runtime)
    shown = [m for m in recent if m.id not in hidden and m.failedItem is None
             and (roles is None or m.role in roles)]
    sections = []
    keywords = extract_keywords(pending_texts, shown)
    if keywords:
        hits = index_for(runtime.settings).search(" ".join(keywords), limit=5)
        memory = format_memory(hits)
        if memory:
            sections.append(memory)
    history = select_history(shown)
    if history:
        sections.append("## History\n" + format_history(history))
    return sections

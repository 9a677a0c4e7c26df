"""The dynamic context of a Teller or Planner run: history and memory within their budgets."""

from __future__ import annotations

import logging
import time
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from redis.exceptions import RedisError

from mimikit.agents.prompts import role_text
from mimikit.conversation.tries import held_back
from mimikit.lifecycle.actions import without_account
from mimikit.memory.archive import copies_chat
from mimikit.memory.inject import (
    extract_keywords,
    format_history,
    format_memory,
    history_tokens,
    select_history,
)
from mimikit.memory.kept import kept_facts
from mimikit.memory.search import MemoryHit
from mimikit.memory.service import index_for
from mimikit.models import Message, Usage
from mimikit.store.runtime import Runtime
from mimikit.tokens import estimate_tokens
from mimikit.tools.reply_checks import plain

log = logging.getLogger("mimikit.agents")
HISTORY_WINDOW = 60
# The history shown begins where a role's last run began it, while all that came since fits:
# a server then reads only its new lines, the rest from its cache. Where it no longer fits, it
# begins anew where the newest messages take this share of its room, and stays so for a while.
HISTORY_RESTART_SHARE = 0.5
# A role's first request, system prompt included: what a local CPU server reads in about 40 s.
# The history gets what its system prompt, the run's own inputs (a message, a task's result,
# the request) and the memory leave; the same figure in every run of a role, so that the
# history, like the system prompt, stays cached from one run to the next.
FIRST_REQUEST_TOKENS = 1500
# Server tokens per estimated token: before a role's first request was counted by the server,
# and the margin kept over the most a counted one took (its inputs count a little differently
# from one run to the next: 1.077-1.099 for the Planner's on Qwen2.5's tokenizer).
UNCOUNTED_SCALE = 1 / 0.95
SCALE_MARGIN = 1.01
SCALE_REREAD_SECONDS = 30.0  # what another process learned reaches this one within this
_scales: WeakKeyDictionary[Any, dict[str, tuple[float, float]]] = WeakKeyDictionary()
INPUTS_TOKENS = 100
MEMORY_TOKENS = 160  # the kept facts first, then what a search finds
# A passage of a chat copy holding a line this long (its first SAID_CHARS) of the run's input or
# History is a copy of it; shorter lines ("ok", "pnpm") are found in passages that say more.
SAID_MIN_TOKENS = 4
SAID_CHARS = 80
MIN_MESSAGES = 5  # shown even over the budget, where it is at least MIN_HISTORY_TOKENS
MIN_HISTORY_TOKENS = 100
HEADING_TOKENS = estimate_tokens("## History\n")
FEWEST_MESSAGES = 2  # shown where the system prompt and the run's inputs leave less, if they fit


def learn_scale(runtime: Runtime, role: str, model: str, messages: list[dict[str, Any]],
                tools: bool, usage: Usage) -> None:
    """Keep how many tokens the server counted for a role's first request (a system prompt
    and one message, no tools offered beside them) per estimated token, where that is the
    most seen for the role and its model."""
    if tools or usage.estimated or not usage.promptTokens or len(messages) != 2:
        return
    estimate = sum(estimate_tokens(str(message.get("content") or "")) for message in messages)
    if not estimate:
        return
    field, scale = f"{role}|{model}", round(usage.promptTokens / estimate, 3)
    try:
        if scale > _learned(runtime, field):
            runtime.redis.hset(runtime.keys.token_scales, field, scale)
            _remember(runtime, field, scale)
    except RedisError as error:  # learned from a later answer: not worth failing this one
        log.warning("could not keep the token count of a %s request: %s", role, error)


def _learned(runtime: Runtime, field: str) -> float:
    """The scale kept for ``field``, read again from Redis at most every
    ``SCALE_REREAD_SECONDS`` (a request's own path pays no round trip for it)."""
    known = _scales.setdefault(runtime.redis, {})
    value, until = known.get(field, (0.0, 0.0))
    if time.monotonic() < until:
        return value
    raw = runtime.redis.hget(runtime.keys.token_scales, field)
    return _remember(runtime, field, float(raw) if raw else 0.0)


def _remember(runtime: Runtime, field: str, value: float) -> float:
    _scales.setdefault(runtime.redis, {})[field] = (value, time.monotonic()
                                                    + SCALE_REREAD_SECONDS)
    return value


def first_request_room(runtime: Runtime, role: str) -> int:
    """Estimated tokens a role's first request holds beside its system prompt."""
    learned = _learned(runtime, f"{role}|{runtime.settings.model_for(role)}")
    scale = learned * SCALE_MARGIN if learned else UNCOUNTED_SCALE
    return int(FIRST_REQUEST_TOKENS / scale) - _static_tokens(role)


@cache
def _static_tokens(role: str) -> int:
    return estimate_tokens(role_text(role, "constrained"))


def context_sections(runtime: Runtime, pending_texts: list[str],
                     exclude_ids: set[str] | None = None,
                     roles: tuple[str, ...] | None = None, role: str = "teller",
                     beside: str = "", keep: bool = True, ahead: int = 0) -> list[str]:
    """``## History`` and ``## Memory`` blocks (either may be absent when empty), in that order
    (the history changes least from one run to the next, and goes first for a server's prompt
    cache), within the budget of ``role``'s first request; ``roles``: the messages of only
    these roles in the history; ``beside``: the run's own inputs shown after them (the
    request, a list of active work), whose lines (a labeled line's value too) the history does
    not repeat and whose tokens beyond ``INPUTS_TOKENS`` it gives up, down to its last
    ``FEWEST_MESSAGES``, and those too where the memory and the inputs leave no room for
    them.

    The history leaves out ``exclude_ids``, the messages held back after a failed pass or
    given up (``tries.held_back``), and the notes that say one gave up: words the model could
    not answer must not spoil another run. It begins where ``role``'s last run began it, while
    that fits (``_steady``; ``keep``: False to leave where it begins as it is). ``ahead``:
    tokens the next run's own input will take beside ``beside``, so that where the history is
    begun anew now is where that run will find it.
    """
    recent, total = runtime.conversation.recent_of_all(HISTORY_WINDOW)
    hidden = (exclude_ids or set()) | held_back(runtime)
    said = {plain(part) for line in beside.splitlines() for part in _said(line)}
    shown = [_briefly(m) for m in recent if m.id not in hidden and m.failedItem is None
             and (roles is None or m.role in roles) and plain(m.text) not in said]
    sections = []
    room = first_request_room(runtime, role) - max(INPUTS_TOKENS,
                                                   estimate_tokens(beside) + ahead)
    history_room = max(0, room - MEMORY_TOKENS)
    first = total - len(recent)
    places = {message.id: first + index for index, message in enumerate(recent)}
    history = _steady(runtime, role, shown, places, history_room,
                      MIN_MESSAGES if history_room >= MIN_HISTORY_TOKENS else FEWEST_MESSAGES,
                      keep, ceiling=room)
    kept = kept_facts(runtime.settings.state_dir) if pending_texts else []
    keywords = extract_keywords(pending_texts, shown)
    hits = index_for(runtime.settings).search(" ".join(keywords), limit=5) if keywords else []
    shown_now = [*pending_texts, *(message.text for message in history)]
    memory = format_memory(kept + _beyond(_unkept(hits, kept), shown_now),
                           budget_tokens=max(0, min(MEMORY_TOKENS, room)))
    history = _fitted(history, room - estimate_tokens(memory))
    if history:
        sections.append("## History\n" + format_history(history))
    if memory:
        sections.append(memory)
    return sections


def _briefly(message: Message) -> Message:
    """A task's outcome as the history shows it: without what its run did, which the pass
    that reported it was shown beside its result, and its report tells again (a failed run's
    commands and their output, about 90 tokens, twice in a row took the newest messages past
    the history's room)."""
    if message.role != "system" or message.taskId is None:
        return message
    brief = without_account(message.text)
    return message if brief == message.text else message.model_copy(update={"text": brief})


def _fitted(history: list[Message], room: int) -> list[Message]:
    """``history`` without its oldest messages while it takes more than ``room``: where even
    its fewest messages would take the first request past its budget, they give way to the
    memory and the run's inputs."""
    while history and estimate_tokens("## History\n" + format_history(history)) > room:
        history = history[1:]
    return history


def _said(line: str) -> tuple[str, ...]:
    """What a line of a run's inputs says: the line, and the value of a labeled one
    ("Answer (chat): ..."), which a message of the history may be word for word."""
    label, colon, value = line.partition(": ")
    return (line, value) if colon and label else (line,)


def _beyond(hits: list[MemoryHit], shown: list[str]) -> list[MemoryHit]:
    """``hits`` that hold more than the words the run is shown already (its input, the
    History): the copy of the day's chat holds them too, and their own words find it first (a
    small model then takes the message it answers for what Memory knows, or copies a reply).
    A fact kept stays, whatever words it shares: it is what was asked to be kept."""
    lines = (" ".join(line.split()) for text in shown for line in text.splitlines())
    said = [line[:SAID_CHARS] for line in lines if estimate_tokens(line) >= SAID_MIN_TOKENS]
    return [hit for hit in hits if not copies_chat(hit.source) or not _holds_any(hit, said)]


def _unkept(hits: list[MemoryHit], kept: list[MemoryHit]) -> list[MemoryHit]:
    """``hits`` that are not among the ``kept`` facts shown already."""
    facts = {(fact.source, fact.content) for fact in kept}
    return [hit for hit in hits if (hit.source, hit.content) not in facts]


def _holds_any(hit: MemoryHit, lines: list[str]) -> bool:
    content = " ".join(hit.content.split())  # once per hit, not once per line
    return any(line in content for line in lines)


def _steady(runtime: Runtime, role: str, shown: list[Message], places: dict[str, int],
            room: int, fewest: int, keep: bool, ceiling: int) -> list[Message]:
    """The messages of ``shown`` from the place in the conversation (``places``) where the
    last run of ``role`` began its history, while they all fit ``room``, or take at most
    ``HISTORY_RESTART_SHARE`` of it more than beginning anew would show (never past
    ``ceiling``, where ``_fitted`` would cut them); else the newest that take that share of it
    (at least ``fewest``), from where the next runs begin. Where the fewest messages take more
    than the room (a failed run told at length), beginning anew at every message would read
    them all again each time (10-13 s on two CPU cores)."""
    key = runtime.keys.meta(f"history-start|{role}")
    start = runtime.redis.get(key)
    slack = int(room * HISTORY_RESTART_SHARE)
    chosen = select_history(shown, budget_tokens=slack, min_count=fewest)
    if start is not None:
        since = [message for message in shown if places.get(message.id, -1) >= int(start)]
        limit = max(room, min(history_tokens(chosen) + slack, ceiling - HEADING_TOKENS))
        steady = select_history(since, budget_tokens=limit, min_count=0)
        if since and len(steady) == len(since):
            return steady
    if keep and chosen:
        runtime.redis.set(key, places.get(chosen[0].id, 0))
    return chosen

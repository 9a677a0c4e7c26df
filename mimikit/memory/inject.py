"""What the Teller sees before each run: keywords, history and memory within their budgets."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING

from mimikit.memory.archive import CHAT_FILE_END
from mimikit.memory.files import SUMMARY_DIR
from mimikit.memory.passages import truncate
from mimikit.memory.tokenize import cut_chinese, is_stop_word
from mimikit.models import Message
from mimikit.tokens import estimate_tokens

if TYPE_CHECKING:
    from mimikit.memory.search import MemoryHit

KEYWORD_PATTERN = re.compile("[a-z0-9_]{2,}|[\u4e00-\u9fff]{2,}", re.IGNORECASE)
_CHINESE = re.compile("[\u4e00-\u9fff]+")
RECENT_MESSAGES_FOR_KEYWORDS = 5
MEMORY_HEADER = "## Memory"
HISTORY_BUDGET_TOKENS = 4096
MEMORY_BUDGET_TOKENS = 2048


def _words(text: str) -> Iterable[str]:
    """The seeds' regex matches, with Chinese runs cut into words by jieba."""
    for match in KEYWORD_PATTERN.findall(text):
        if _CHINESE.fullmatch(match):
            yield from (word for word in cut_chinese(match) if len(word) >= 2)
        else:
            yield match.lower()


def extract_keywords(
    pending_texts: Sequence[str], recent_messages: Sequence[Message], top: int = 6
) -> list[str]:
    """Pick the search keywords for the next Teller run.

    Args:
        pending_texts: Unprocessed user inputs (the strongest signal, ranked first).
        recent_messages: The conversation; only its last 5 messages are read.
        top: How many keywords to return.

    Returns:
        Up to ``top`` distinct keywords, stop words removed, ordered by source (pending
        inputs first), then frequency, then first appearance.
    """
    sources = [list(pending_texts)]
    sources.append([m.text for m in recent_messages[-RECENT_MESSAGES_FOR_KEYWORDS:]])
    priority: dict[str, int] = {}
    frequency: Counter[str] = Counter()
    for rank, texts in enumerate(sources):
        for text in texts:
            for word in _words(text):
                if is_stop_word(word):
                    continue
                priority.setdefault(word, rank)
                frequency[word] += 1
    order = {word: index for index, word in enumerate(priority)}
    ranked = sorted(priority, key=lambda word: (priority[word], -frequency[word], order[word]))
    return ranked[:top]


def format_message(message: Message, day: date | None = None) -> str:
    """One history line: time, role and text; the date only when it is not ``day`` (a
    history's last day: its digits are a dozen tokens a line)."""
    when = f"{message.createdAt:%H:%M}" if message.createdAt.date() == day else \
        f"{message.createdAt:%Y-%m-%d %H:%M}"
    return f"[{when}] {message.role}: {message.text}"


def _cost(message: Message, day: date | None) -> int:
    """The tokens of ``message``'s line in a history whose last day is ``day``; +1 for the
    newline that joins it to the next line in format_history."""
    return estimate_tokens(format_message(message, day)) + 1


def _cut(message: Message, max_chars: int) -> Message:
    if len(message.text) <= max_chars:
        return message
    return message.model_copy(update={"text": truncate(message.text, max_chars)})


def _dedupe(messages: Iterable[Message]) -> list[Message]:
    """Unique by (createdAt, text), oldest first (stable for equal times)."""
    seen: set[tuple] = set()
    unique = []
    for message in messages:
        key = (message.createdAt, message.text)
        if key not in seen:
            seen.add(key)
            unique.append(message)
    return sorted(unique, key=lambda m: m.createdAt)


def select_history(
    messages: Sequence[Message],
    budget_tokens: int = HISTORY_BUDGET_TOKENS,
    min_count: int = 5,
    max_count: int = 20,
    max_chars: int = 500,
) -> list[Message]:
    """Choose the recent messages to show the Teller.

    Messages are taken newest first until the token budget is reached, at least
    ``min_count`` (even over budget) and at most ``max_count``. Assistant replies longer
    than ``max_chars`` are always cut; a long user message is cut only when the budget
    needs the room, so the user's own words survive longest.

    Args:
        messages: The conversation, any order, possibly with duplicates.
        budget_tokens: Token budget for the formatted history (see ``format_history``).
        min_count: Fewest messages to return (if the history has them).
        max_count: Most messages to return.
        max_chars: Length above which a message is cut, with a truncation mark.

    Returns:
        The chosen messages, oldest first; cut ones are copies.
    """
    chosen: list[Message] = []  # newest first
    spent = 0
    ordered = _dedupe(messages)
    day = ordered[-1].createdAt.date() if ordered else None  # the lines' form: format_history

    def cost(message: Message) -> int:
        return _cost(message, day)

    for message in reversed(ordered):
        if len(chosen) >= max_count:
            break
        if message.role == "assistant":
            message = _cut(message, max_chars)
        if spent + cost(message) > budget_tokens:
            # Make room by cutting long user messages too, but only if that lets this one in
            # (or the minimum count demands it); otherwise leave the chosen ones whole.
            trimmed = [_cut(m, max_chars) for m in chosen]
            trimmed_spent = sum(cost(m) for m in trimmed)
            message = _cut(message, max_chars)
            if trimmed_spent + cost(message) > budget_tokens and len(chosen) >= min_count:
                break
            chosen, spent = trimmed, trimmed_spent
        chosen.append(message)
        spent += cost(message)
    return chosen[::-1]


def format_history(messages: Sequence[Message]) -> str:
    """The history block of the Teller prompt: one ``[time] role: text`` line per message, the
    date left out on the last message's day (a line keeps its form until the day after)."""
    day = messages[-1].createdAt.date() if messages else None
    return "\n".join(format_message(message, day) for message in messages)


def history_tokens(messages: Sequence[Message]) -> int:
    """The tokens ``messages`` take as ``select_history`` counts them."""
    day = messages[-1].createdAt.date() if messages else None
    return sum(_cost(message, day) for message in messages)


def format_memory(
    hits: Sequence[MemoryHit], budget_tokens: int = MEMORY_BUDGET_TOKENS, max_hits: int = 5
) -> str:
    """The ``## Memory`` block: ``[source] content`` lines, best first, within the budget.

    Returns:
        The block, or "" when there is no hit (or none fits), so nothing is injected.
    """
    lines = [MEMORY_HEADER]
    spent = estimate_tokens(MEMORY_HEADER)
    for hit in sorted(hits, key=lambda h: -h.score)[:max_hits]:
        line = f"[{hit.source}] {' '.join(hit.content.split())}"
        cost = estimate_tokens(line) + 1  # +1 for the joining newline
        if spent + cost > budget_tokens:
            break
        lines.append(line)
        spent += cost
    return "\n".join(lines) if len(lines) > 1 else ""


_SOURCE = re.compile(r"^\[[^\]\n]*\]\s*")  # the "[source] " ``format_memory`` puts first


def memory_passages(block: str, said: bool = True) -> list[str]:
    """The passages a ``## Memory`` block (``format_memory``) shows, without their sources;
    those of the chat's copies and summaries too, unless not ``said``."""
    return [_SOURCE.sub("", line) for line in block.splitlines()[1:] if line.strip() and (
        said or not _said(_SOURCE.match(line)))]


def _said(source: re.Match[str] | None) -> bool:
    """Whether a passage's source is a copy or a summary of the chat."""
    name = source[0].strip().strip("[]") if source else ""
    return name.endswith(CHAT_FILE_END) or name.startswith(SUMMARY_DIR + "/")

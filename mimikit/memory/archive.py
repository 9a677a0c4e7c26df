"""Archival and flush of the conversation into memory files (code only; summaries by a Worker)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Literal

from mimikit.exceptions import InvalidValue
from mimikit.memory.files import RECENT_DIR, SUMMARY_DIR, as_utc
from mimikit.models import Message

CHAT_FILE_END = "-chat.md"  # a day's chat copied as is: what was said, not what was kept

COPY_MAX_AGE_DAYS = 5
DAILY_MAX_AGE_DAYS = 90
ARCHIVE_MIN_MESSAGES = 100  # archive when the history holds more than this
ARCHIVE_INTERVAL = timedelta(hours=6)
FLUSH_MIN_MESSAGES = 800
FLUSH_INTERVAL = timedelta(hours=1)

SummaryKind = Literal["daily", "monthly"]
_MARKER = re.compile(r"<!-- at:(\S+) id:(\S+) -->")
# The files that copy the conversation as it was said (a day's chat, a flush), by the path
# memory search names them with: not facts kept, but the words History shows while it can.
_CHAT_COPY = re.compile(rf"{re.escape(RECENT_DIR)}/\d{{4}}-\d\d-\d\d(?:-chat)?\.md")


@dataclass
class ArchiveReport:
    """What one archival pass did."""

    copied: list[Path] = field(default_factory=list)  # chat copies written (new or changed)
    requested: list[tuple[str, str]] = field(default_factory=list)  # (kind, period) asked for
    skipped: list[tuple[str, str]] = field(default_factory=list)  # already summarised/claimed


def summary_path(state_dir: Path, kind: SummaryKind, period: str) -> Path:
    """Where the summary of ``period`` (``YYYY-MM-DD`` daily, ``YYYY-MM`` monthly) lives.

    Raises:
        InvalidValue: When ``kind`` is unknown or ``period`` does not match it.
    """
    shapes = {"daily": r"\d{4}-\d{2}-\d{2}", "monthly": r"\d{4}-\d{2}"}
    if kind not in shapes:
        raise InvalidValue(f"summary kind {kind!r} is unknown; use 'daily' or 'monthly'")
    if not re.fullmatch(shapes[kind], period):
        wanted = "YYYY-MM-DD" if kind == "daily" else "YYYY-MM"
        raise InvalidValue(f"{kind} summary period {period!r} is malformed; use {wanted}")
    return Path(state_dir) / SUMMARY_DIR / f"{period}.md"


def copies_chat(source: str) -> bool:
    """Whether the memory file ``source`` (as search names it) is a copy of the chat."""
    return _CHAT_COPY.fullmatch(source) is not None


def message_markdown(message: Message) -> str:
    """A message as markdown, with a hidden marker that identifies it (for idempotence)."""
    at = as_utc(message.createdAt)
    return (
        f"### {at:%H:%M} {message.role} <!-- at:{at.isoformat()} id:{message.id} -->\n"
        f"{message.text.strip()}\n"
    )


def should_archive(history_len: int, last_run: datetime | None, now: datetime) -> bool:
    """True when the history holds over 100 messages or 6 h have passed since the last run."""
    if history_len > ARCHIVE_MIN_MESSAGES or last_run is None:
        return True
    return as_utc(now) - as_utc(last_run) >= ARCHIVE_INTERVAL


def _by_day(history: Sequence[Message]) -> dict[date, list[Message]]:
    days: dict[date, list[Message]] = defaultdict(list)
    for message in sorted(history, key=lambda m: as_utc(m.createdAt)):
        days[as_utc(message.createdAt).date()].append(message)
    return days


def _copy_day(state_dir: Path, day: date, messages: list[Message]) -> Path | None:
    """Write the day's chat as is; None when the file already holds exactly that."""
    path = Path(state_dir) / RECENT_DIR / f"{day:%Y-%m-%d}{CHAT_FILE_END}"
    text = f"# Chat {day:%Y-%m-%d}\n\n" + "\n".join(message_markdown(m) for m in messages)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # readers never see half a file
    return path


def archive(
    history: Sequence[Message],
    state_dir: Path,
    now: datetime,
    claim: Callable[[str], bool],
    request_summary: Callable[[str, str, list[Message]], object],
) -> ArchiveReport:
    """Archive the conversation into memory.

    Days up to 5 days old are copied as is to ``memory/YYYY-MM-DD-chat.md``; each day 5-90
    days old gets one daily summary request, and each month with messages older than 90
    days one monthly summary request. A request is made once: not when its summary file
    exists, and only if ``claim`` grants its key.

    Args:
        history: The conversation.
        state_dir: The Mimikit state dir.
        now: The current time.
        claim: ``claim(key) -> bool``, True only the first time a key is claimed
            (cluster-wide, e.g. Redis SET NX). Keys look like ``archive:daily:2026-01-28``.
        request_summary: ``request_summary(kind, period, messages)`` queues the Worker
            that writes ``summary_path(state_dir, kind, period)``.

    Returns:
        What was copied, requested and skipped.
    """
    report = ArchiveReport()
    today = as_utc(now).date()
    monthly: dict[str, list[Message]] = defaultdict(list)
    for day, messages in _by_day(history).items():
        age = (today - day).days
        if age <= COPY_MAX_AGE_DAYS:
            copied = _copy_day(state_dir, day, messages)
            if copied is not None:
                report.copied.append(copied)
        elif age <= DAILY_MAX_AGE_DAYS:
            _request(state_dir, "daily", f"{day:%Y-%m-%d}", messages, claim, request_summary, report)
        else:
            monthly[f"{day:%Y-%m}"].extend(messages)
    for month, messages in monthly.items():
        _request(state_dir, "monthly", month, messages, claim, request_summary, report)
    return report


def _request(
    state_dir: Path,
    kind: SummaryKind,
    period: str,
    messages: list[Message],
    claim: Callable[[str], bool],
    request_summary: Callable[[str, str, list[Message]], object],
    report: ArchiveReport,
) -> None:
    if summary_path(state_dir, kind, period).exists() or not claim(f"archive:{kind}:{period}"):
        report.skipped.append((kind, period))
        return
    request_summary(kind, period, messages)
    report.requested.append((kind, period))


def _flushed_until(folder: Path) -> tuple[datetime | None, set[str]]:
    """The newest flushed message time, and the ids flushed at that time, from the last file."""
    files = sorted(folder.glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md"))
    if not files:
        return None, set()
    markers = [(datetime.fromisoformat(at), key) for at, key in _MARKER.findall(
        files[-1].read_text(encoding="utf-8"))]
    if not markers:
        return None, set()
    newest = max(at for at, _ in markers)
    return newest, {key for at, key in markers if at == newest}


def flush(
    history: Sequence[Message], state_dir: Path, now: datetime, last_flush_at: datetime | None
) -> Path | None:
    """Append the conversation to ``memory/YYYY-MM-DD.md`` when it has grown long.

    Runs only when the history holds >= 800 messages and >= 1 h has passed since the
    last flush (or there was none). Messages already flushed (up to the newest one in the
    latest flush file) are not appended again.

    Returns:
        The file appended to, or None when the thresholds are not met or nothing is new.
    """
    moment = as_utc(now)
    if len(history) < FLUSH_MIN_MESSAGES:
        return None
    if last_flush_at is not None and moment - as_utc(last_flush_at) < FLUSH_INTERVAL:
        return None
    folder = Path(state_dir) / RECENT_DIR
    newest, ids_at_newest = _flushed_until(folder)
    fresh = [
        m for m in sorted(history, key=lambda m: as_utc(m.createdAt))
        if newest is None or as_utc(m.createdAt) > newest
        or (as_utc(m.createdAt) == newest and m.id not in ids_at_newest)
    ]
    if not fresh:
        return None
    path = folder / f"{moment:%Y-%m-%d}.md"
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(message_markdown(m) for m in fresh) + "\n")
    return path

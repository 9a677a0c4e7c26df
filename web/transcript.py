"""The conversation as a readable markdown transcript (``GET /api/messages/export?format=markdown``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from mimikit.models import Message


def stamp(moment: datetime) -> str:
    """``2026-01-28 10:15:03 UTC``: the time of a message, to the second, in UTC."""
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return aware.strftime("%Y-%m-%d %H:%M:%S UTC")


def transcript(messages: Iterable[Message], exported_at: datetime) -> str:
    """One heading per message (who wrote it and when), then its text as written."""
    messages = list(messages)
    parts = ["# Mimikit conversation", "",
             f"Exported {stamp(exported_at)} · {len(messages)} messages", ""]
    for message in messages:
        parts += ["---", "", _heading(message), "", message.text.strip("\n"), ""]
    return "\n".join(parts)


def _heading(message: Message) -> str:
    task = f" · task {message.taskId}" if message.taskId else ""
    return f"## {message.role.capitalize()} · {stamp(message.createdAt)}{task}"


def filename(exported_at: datetime, extension: str) -> str:
    """``mimikit-conversation-2026-01-28.md``."""
    return f"mimikit-conversation-{exported_at.astimezone(UTC):%Y-%m-%d}.{extension}"

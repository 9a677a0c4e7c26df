"""One logging setup for every process: ``mimikit up``, workers, beat, web and flower.

The level is ``MIMIKIT_LOG_LEVEL`` and the format ``MIMIKIT_LOG_FORMAT``: ``text`` lines, or
``json``, one object per line with ``time``, ``level``, ``logger`` and ``message``, plus the
``taskId``, ``traceId`` and ``celeryId`` of the work being done where they are known (bound by
``bind`` while a Celery task runs, or passed as ``extra``). Celery is kept from configuring
logging itself (``configure`` answers its ``setup_logging`` signal). The supervisor tick runs
every second: its routine lines (received, succeeded, sent by beat) are dropped below WARNING,
while those of real work stay.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any

from mimikit.config import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_FIELDS = ("taskId", "traceId", "celeryId")
EXTRA_FIELDS = (*CONTEXT_FIELDS, "http")
# Celery tasks whose routine lines are not logged below WARNING (they run every second).
ROUTINE_TASKS = ("mimikit.supervisor.tick",)
ROUTINE_LOGGERS = ("celery", "redbeat", "mimikit.scheduling.beat")
# Loggers that write a line per HTTP request (each LLM call): heard at DEBUG only.
HTTP_LOGGERS = ("httpx",)

_context: ContextVar[dict[str, str] | None] = ContextVar("mimikit_log_context", default=None)


class MimikitHandler(logging.StreamHandler):
    """The one handler ``configure`` installs on the root logger (replaced on a second call)."""


def configure(level: str, log_format: str, stream: IO[str] | None = None) -> logging.Handler:
    """Send every log record of this process at ``level`` or above to ``stream`` (stderr),
    formatted as ``text`` or ``json``; returns the handler."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, MimikitHandler)]:
        root.removeHandler(old)
    handler = MimikitHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter(TEXT_FORMAT))
    handler.addFilter(add_context)
    handler.addFilter(RoutineFilter())
    handler.setLevel(level)  # also for loggers that set a lower level of their own
    root.addHandler(handler)
    root.setLevel(level)
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if root.level <= logging.DEBUG
                                         else logging.WARNING)
    logging.captureWarnings(True)
    return handler


def configure_from(settings: Settings, stream: IO[str] | None = None) -> logging.Handler:
    """``configure`` with ``MIMIKIT_LOG_LEVEL`` and ``MIMIKIT_LOG_FORMAT``."""
    return configure(settings.log_level, settings.log_format, stream)


def celery_flags(settings: Settings) -> list[str]:
    """Set up this process's logging before Celery starts (what it says first has the format
    too); returns Celery's global options for it: ``--quiet`` for JSON, as its start-up banner
    is not JSON."""
    configure_from(settings)
    return ["--quiet"] if settings.log_format == "json" else []


def bind(**ids: str | None) -> None:
    """Add ids (``taskId``, ``traceId``, ``celeryId``) to the records of the work in hand."""
    known = {**(_context.get() or {}), **{k: v for k, v in ids.items() if v}}
    _context.set(known)


def unbind() -> None:
    """Forget the ids bound for the work that just ended."""
    _context.set(None)


def add_context(record: logging.LogRecord) -> bool:
    """A filter that puts the bound ids on ``record`` (ids passed as ``extra`` win)."""
    for name, value in (_context.get() or {}).items():
        if getattr(record, name, None) is None:
            setattr(record, name, value)
    data = getattr(record, "data", None)  # Celery's own task lines carry the task id here
    if getattr(record, "celeryId", None) is None and isinstance(data, dict) and "id" in data:
        record.celeryId = data["id"]
    return True


class RoutineFilter(logging.Filter):
    """Drops the lines below WARNING that Celery and beat write for each routine task run."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or not record.name.startswith(ROUTINE_LOGGERS):
            return True
        try:
            text = record.getMessage()
        except (TypeError, ValueError, KeyError):
            return True  # the formatter will say what is wrong with it
        return not any(name in text for name in ROUTINE_TASKS)


class TextFormatter(logging.Formatter):
    """``TEXT_FORMAT``, with the ids of the work in hand at the end of the line."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        ids = " ".join(f"{name}={getattr(record, name)}" for name in CONTEXT_FIELDS
                       if getattr(record, name, None))
        if not ids:
            return text
        first, newline, rest = text.partition("\n")  # after the message, before a traceback
        return f"{first} [{ids}]{newline}{rest}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        for name in EXTRA_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)

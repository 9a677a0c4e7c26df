"""Log files that rotate by size: ``STATE_DIR/log.jsonl`` and the process logs of ``mimikit up``.

A file over ``LOG_FILE_MAX_BYTES`` becomes ``NAME.1`` (``NAME.1`` becomes ``NAME.2``, ..., up to
``LOG_FILE_BACKUPS`` files) and writing goes on in a new one: the standard library's
``RotatingFileHandler``. Every worker, beat and web process appends to ``log.jsonl``, so there a
write holds a lock file (``log.jsonl.lock``) while it checks the size and rotates, and a process
whose file another one rotated reopens the new file instead of writing to the old one.
"""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

LOG_FILE_MAX_BYTES = 10 * 1024 * 1024
LOG_FILE_BACKUPS = 5


class LineFileHandler(logging.handlers.RotatingFileHandler):
    """A ``RotatingFileHandler`` of lines as they are (one writer at a time)."""

    def __init__(self, path: Path | str, max_bytes: int = LOG_FILE_MAX_BYTES,
                 backups: int = LOG_FILE_BACKUPS) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8",
                         delay=True)
        self.setFormatter(logging.Formatter("%(message)s"))

    def write_lines(self, lines: Iterable[str]) -> None:
        """Append ``lines`` (without their newlines) together, in one write."""
        lines = list(lines)
        if lines:
            self.handle(logging.makeLogRecord({"msg": "\n".join(lines), "levelno": logging.INFO}))


class SharedRotatingFileHandler(LineFileHandler):
    """A ``LineFileHandler`` that several processes may append to at once (on one host)."""

    def __init__(self, path: Path | str, max_bytes: int = LOG_FILE_MAX_BYTES,
                 backups: int = LOG_FILE_BACKUPS) -> None:
        super().__init__(path, max_bytes, backups)
        self.lock_path = f"{self.baseFilename}.lock"
        self._lock_file: IO[bytes] | None = None
        self._lock_pid = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with self._held():
                self._follow_rotation()
                super().emit(record)
        except OSError:
            self.handleError(record)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """Hold the lock file (opened again after a fork: a lock is shared with the parent)."""
        if self._lock_file is None or self._lock_pid != os.getpid():
            self._lock_file = open(self.lock_path, "ab")  # noqa: SIM115 - kept open
            self._lock_pid = os.getpid()
        fcntl.flock(self._lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    def _follow_rotation(self) -> None:
        """Close the open file when another process rotated it away (it is reopened)."""
        if self.stream is None:
            return
        try:
            on_disk = os.stat(self.baseFilename)
        except FileNotFoundError:
            on_disk = None
        if on_disk is None or not os.path.samestat(on_disk, os.fstat(self.stream.fileno())):
            self.stream.close()
            self.stream = None  # reopened by emit

    def close(self) -> None:
        super().close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def rotate_if_over(path: Path, max_bytes: int = LOG_FILE_MAX_BYTES,
                   backups: int = LOG_FILE_BACKUPS) -> bool:
    """Rotate ``path`` when it is over ``max_bytes``, for a file another program writes by
    opening it for each line (redis-server's log); True when it did."""
    try:
        if path.stat().st_size < max_bytes:
            return False
    except FileNotFoundError:
        return False
    handler = LineFileHandler(path, max_bytes, backups)
    try:
        handler.doRollover()
    finally:
        handler.close()
    return True


def pump(stream: IO[bytes], path: Path, max_bytes: int = LOG_FILE_MAX_BYTES,
         backups: int = LOG_FILE_BACKUPS) -> threading.Thread:
    """Copy the lines of ``stream`` (a child's output) to ``path``, rotated, until it ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = LineFileHandler(path, max_bytes, backups)

    def copy() -> None:
        try:
            for raw in iter(stream.readline, b""):
                handler.write_lines([raw.decode("utf-8", "replace").rstrip("\n")])
        finally:
            stream.close()
            handler.close()

    thread = threading.Thread(target=copy, daemon=True, name=f"log-{path.name}")
    thread.start()
    return thread

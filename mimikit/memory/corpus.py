"""Which files memory search reads: ``memory.md``, ``memory/``, ``memory/summary/`` and docs."""

from __future__ import annotations

import os
from pathlib import Path
from stat import S_ISREG

from mimikit.memory.files import LONG_TERM_FILE, RECENT_DIR, SUMMARY_DIR

DOCS_DIR = "docs"

Signature = tuple[int, int]  # (mtime_ns, size): a change in either means the file changed


class Corpus:
    """The searchable files of one state dir and one work dir.

    Args:
        state_dir: The Mimikit state dir: ``memory.md``, ``memory/*.md`` and
            ``memory/summary/*.md`` are searched.
        work_dir: The work dir: ``docs/**/*.md`` are searched.
    """

    def __init__(self, state_dir: Path, work_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.work_dir = Path(work_dir)
        self._flat = {
            str(self.state_dir / RECENT_DIR): RECENT_DIR,
            str(self.state_dir / SUMMARY_DIR): SUMMARY_DIR,
        }
        self._docs = str(self.work_dir / DOCS_DIR)
        self._long_term = str(self.state_dir / LONG_TERM_FILE)

    def folders(self) -> list[tuple[Path, bool]]:
        """The folders whose changes matter, each with whether its sub-folders matter too."""
        return [
            (self.state_dir, False),
            *((Path(folder), False) for folder in self._flat),
            (Path(self._docs), True),
        ]

    def roots(self) -> list[Path]:
        """The files and folders to hand to a text search tool."""
        return [Path(self._long_term), self.state_dir / RECENT_DIR, Path(self._docs)]

    def source_of(self, path: str) -> str | None:
        """The source name shown in hits for ``path`` (``memory/x.md``), None if not searched."""
        if path == self._long_term:
            return LONG_TERM_FILE
        if not path.endswith(".md"):
            return None
        folder, name = os.path.split(path)
        if folder in self._flat:
            return f"{self._flat[folder]}/{name}"
        if path.startswith(self._docs + os.sep):
            return DOCS_DIR + path[len(self._docs):].replace(os.sep, "/")
        return None

    def scan(self) -> dict[str, tuple[str, Signature]]:
        """Every searchable file: absolute path -> (source name, signature)."""
        found: dict[str, tuple[str, Signature]] = {}
        try:
            stat = os.stat(self._long_term)
            found[self._long_term] = (LONG_TERM_FILE, (stat.st_mtime_ns, stat.st_size))
        except (FileNotFoundError, NotADirectoryError):
            pass  # no long-term memory yet
        for folder, prefix in self._flat.items():
            _scan_dir(folder, prefix, found, recursive=False)
        _scan_dir(self._docs, DOCS_DIR, found, recursive=True)
        return found


def signature_of(path: str) -> Signature | None:
    """The (mtime_ns, size) of a file, None when it is gone or not a regular file."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not S_ISREG(stat.st_mode):
        return None
    return stat.st_mtime_ns, stat.st_size


def _scan_dir(folder: str, prefix: str, found: dict, recursive: bool) -> None:
    """Add the ``.md`` files of ``folder`` (and below, if ``recursive``) to ``found``."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_dir() and recursive:
            _scan_dir(entry.path, f"{prefix}/{entry.name}", found, True)
        elif entry.name.endswith(".md") and entry.is_file():
            try:
                stat = entry.stat()
            except FileNotFoundError:
                continue  # removed between listing and stat
            found[entry.path] = (f"{prefix}/{entry.name}", (stat.st_mtime_ns, stat.st_size))

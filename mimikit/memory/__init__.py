"""Memory: markdown files under the state dir, BM25 search over them (one index per process,
kept up to date), prompt injection, archival and flush rules, and the backlog file.

Archival runs as supervisor work (``mimikit.supervisor.archival``); what it writes and when is
decided here.
"""

from typing import Any

from mimikit.memory.archive import ArchiveReport, archive, flush, should_archive, summary_path
from mimikit.memory.files import file_date, remember
from mimikit.memory.inject import extract_keywords, format_history, format_memory, select_history
from mimikit.memory.tokenize import tokenize
from mimikit.tokens import estimate_tokens


def __getattr__(name: str) -> Any:
    # The index (numpy, BM25) is imported by the processes that search, not by every one that
    # only writes memory or counts tokens.
    if name in ("MemoryHit", "MemoryIndex"):
        from mimikit.memory import search

        return getattr(search, name)
    raise AttributeError(f"module 'mimikit.memory' has no attribute {name!r}")


__all__ = [
    "ArchiveReport",
    "MemoryHit",
    "MemoryIndex",
    "archive",
    "estimate_tokens",
    "extract_keywords",
    "file_date",
    "flush",
    "format_history",
    "format_memory",
    "remember",
    "select_history",
    "should_archive",
    "summary_path",
    "tokenize",
]

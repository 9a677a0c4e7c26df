"""The facts the person asked to keep, newest first: shown to the Teller and the Planner beside
what a search finds, whatever words a request uses. A search finds a fact by the words they
share; "when is my birthday?" shares none with "记住我的生日是5月3日", and the 1.5B model then
promised to ask for the date it had been told.
"""

from __future__ import annotations

import os
from pathlib import Path

from mimikit.memory.archive import copies_chat
from mimikit.memory.files import LONG_TERM_FILE, RECENT_DIR
from mimikit.memory.passages import PASSAGE_MAX_CHARS, split_passages, truncate
from mimikit.memory.search import MemoryHit

KEPT_SHOWN = 3
CANDIDATES = 20  # dated files looked at, newest names first (a day's are ordered by time)
LONG_TERM_TAIL = 16_384  # bytes of the end of memory.md read: its newest facts
KEPT = float("inf")  # the score of a kept fact: before every hit of a search


def kept_facts(state_dir: Path, count: int = KEPT_SHOWN) -> list[MemoryHit]:
    """The newest ``count`` facts of the dated files ``remember`` writes (copies of the chat
    are not facts), then of ``memory.md``'s last passages."""
    facts = _dated(Path(state_dir), count)
    if len(facts) < count:
        facts += _long_term(Path(state_dir), count - len(facts))
    return facts


def _dated(state_dir: Path, count: int) -> list[MemoryHit]:
    try:
        names = os.listdir(state_dir / RECENT_DIR)  # names only: a year of them is not read
    except OSError:
        return []
    sources = sorted((f"{RECENT_DIR}/{name}" for name in names if name.endswith(".md")
                      and not copies_chat(f"{RECENT_DIR}/{name}")), reverse=True)[:CANDIDATES]
    facts = []
    for source in sorted(sources, key=lambda s: _mtime(state_dir / s), reverse=True)[:count]:
        text = _read(state_dir / source)
        if text:
            facts.append(MemoryHit(source=source, content=truncate(text, PASSAGE_MAX_CHARS),
                                   score=KEPT))
    return facts


def _long_term(state_dir: Path, count: int) -> list[MemoryHit]:
    path = state_dir / LONG_TERM_FILE
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - LONG_TERM_TAIL))
            tail = handle.read().decode("utf-8", errors="ignore")
    except OSError:
        return []
    passages = [p for p in split_passages(tail) if p.strip()][-count:]
    return [MemoryHit(source=LONG_TERM_FILE, content=p, score=KEPT) for p in reversed(passages)]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> str:
    try:
        return " ".join(path.read_text(encoding="utf-8", errors="replace").split())
    except OSError:
        return ""

"""The files an index holds and their passages by id: text, source and the period covered."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from mimikit.memory.corpus import Signature

_INITIAL_CAPACITY = 1024


@dataclass(frozen=True)
class IndexedFile:
    """One file as the index holds it.

    Attributes:
        signature: (mtime_ns, size) when it was read.
        source: The name hits show (``memory/2026-01-28-deploy.md``).
        period: The time span it covers, for time filters.
        passages: Its search passages in file order.
        terms: The search terms of each passage, joined by spaces (terms hold none).
    """

    signature: Signature
    source: str
    period: tuple[datetime, datetime]
    passages: list[str]
    terms: list[str]


class Catalog:
    """Indexed files by path, and their passages by small integer ids reused after removal."""

    def __init__(self) -> None:
        self.files: dict[str, IndexedFile] = {}
        self._ids: dict[str, list[int]] = {}  # path -> ids of its passages, in file order
        self._texts: list[str] = []  # id -> passage
        self._sources: list[str] = []  # id -> source name
        self._starts = np.zeros(_INITIAL_CAPACITY)  # id -> period start, epoch seconds
        self._ends = np.zeros(_INITIAL_CAPACITY)
        self._free: list[int] = []

    def add(self, path: str, entry: IndexedFile) -> list[int]:
        """Hold ``entry`` under ``path`` (which must not be held) and give its passages ids."""
        ids = [self._allocate() for _ in entry.passages]
        self._grow(max(ids, default=0) + 1)
        start, end = (moment.timestamp() for moment in entry.period)
        for passage_id, text in zip(ids, entry.passages, strict=True):
            self._texts[passage_id] = text
            self._sources[passage_id] = entry.source
        self._starts[ids] = start
        self._ends[ids] = end
        self.files[path] = entry
        self._ids[path] = ids
        return ids

    def remove(self, path: str) -> tuple[IndexedFile, list[int]] | None:
        """Forget ``path``; returns what it held and the ids its passages had, if anything."""
        entry = self.files.pop(path, None)
        if entry is None:
            return None
        ids = self._ids.pop(path)
        for passage_id in ids:
            self._texts[passage_id] = ""
        self._free.extend(reversed(ids))
        return entry, ids

    def passage(self, passage_id: int) -> tuple[str, str]:
        """(source name, passage text) of a passage id."""
        return self._sources[passage_id], self._texts[passage_id]

    def within(self, ids: np.ndarray, after: datetime | None, before: datetime | None) -> np.ndarray:
        """Which of ``ids`` belong to files whose period overlaps [after, before].

        A file is out when it ends at or before ``after`` (and starts before it), or starts
        after ``before``; either bound may be None. Returns a boolean mask over ``ids``.
        """
        keep = np.ones(len(ids), dtype=bool)
        if after is not None:
            moment = after.timestamp()
            keep &= ~((self._ends[ids] <= moment) & (self._starts[ids] < moment))
        if before is not None:
            keep &= self._starts[ids] <= before.timestamp()
        return keep

    def _allocate(self) -> int:
        if self._free:
            return self._free.pop()
        self._texts.append("")
        self._sources.append("")
        return len(self._texts) - 1

    def _grow(self, size: int) -> None:
        if size <= len(self._starts):
            return
        capacity = max(size, 2 * len(self._starts))
        for name in ("_starts", "_ends"):
            grown = np.zeros(capacity)
            old = getattr(self, name)
            grown[: len(old)] = old
            setattr(self, name, grown)

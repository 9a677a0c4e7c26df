"""BM25 search over memory files and project docs, kept warm and updated file by file."""

from __future__ import annotations

import heapq
import logging
import os
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from mimikit.memory.bm25 import PositiveBM25
from mimikit.memory.fallback import substring_search
from mimikit.memory.files import (
    LONG_TERM_FILE,
    RECENT_DIR,
    SUMMARY_DIR,
    as_utc,
    file_period,
    in_span,
)
from mimikit.memory.passages import (
    PASSAGE_MAX_CHARS,
    TRUNCATION_MARK,
    split_passages,
    truncate,
)
from mimikit.memory.tokenize import tokenize
from mimikit.models import Model

logger = logging.getLogger("mimikit.memory")

DOCS_DIR = "docs"


class MemoryHit(Model):
    """One search result: where it came from, the passage (<= 300 chars) and its score."""

    source: str
    content: str
    score: float


@dataclass
class _File:
    signature: tuple[int, int]  # (mtime_ns, size): a change in either means re-read
    source: str
    period: tuple[datetime, datetime]
    passages: list[str]
    counts: list[Counter[str]]
    lengths: list[int]


class MemoryIndex:
    """Search memory (``memory.md``, ``memory/``, ``memory/summary/``) and ``WORK_DIR/docs``.

    Each query re-stats the files (cheap) and re-reads only those added, changed or
    removed since the last query; the BM25 model is then reassembled from cached counts.

    Args:
        state_dir: The Mimikit state dir.
        work_dir: The work dir whose ``docs/**/*.md`` are searched too.
    """

    def __init__(self, state_dir: Path, work_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.work_dir = Path(work_dir)
        self.rebuild_count = 0
        self.update_count = 0
        self._lock = threading.Lock()
        self._reset()

    def search(
        self,
        query: str,
        after: datetime | None = None,
        before: datetime | None = None,
        limit: int = 5,
    ) -> list[MemoryHit]:
        """Find the passages that best match ``query``.

        Args:
            query: Free text, Chinese, English or mixed.
            after: Only files dated at or after this time (name date, else mtime).
            before: Only files dated at or before this time.
            limit: At most this many hits.

        Returns:
            Hits best first, all with score > 0; [] when nothing matches.
        """
        if limit <= 0 or not query.strip():
            return []
        span = (as_utc(after) if after else None, as_utc(before) if before else None)
        with self._lock:
            try:
                terms = list(dict.fromkeys(tokenize(query)))
                self._refresh()
                scored = self._bm25_scores(terms, span, limit)
            except Exception as error:  # search must degrade, never fail the agent's run
                self._reset()  # a half-applied update must not survive: rebuild next time
                roots = [self.state_dir / LONG_TERM_FILE, self.state_dir / RECENT_DIR]
                roots.append(self.work_dir / DOCS_DIR)
                scored = substring_search(query, self._scan(), roots, span, error)
        best = heapq.nsmallest(limit, scored, key=lambda item: (-item[0], item[1]))
        return [
            MemoryHit(source=source, content=truncate(text, PASSAGE_MAX_CHARS), score=score)
            for score, source, text in best
        ]

    # --- keeping the index current ------------------------------------------------------

    def _reset(self) -> None:
        self._files: dict[str, _File] = {}  # by absolute path
        self._doc_count: Counter[str] = Counter()  # term -> passages containing it
        self._postings: dict[str, dict[str, list[int]]] = {}  # term -> path -> passage nos.
        self._offsets: dict[str, int] = {}  # path -> id of its first passage in the model
        self._owners: list[str] = []  # passage id -> path
        self._model: PositiveBM25 | None = None

    def _scan(self) -> dict[str, tuple[str, tuple[int, int]]]:
        """Every corpus file with its source name and (mtime_ns, size) signature."""
        found: dict[str, tuple[str, tuple[int, int]]] = {}
        long_term = self.state_dir / LONG_TERM_FILE
        if long_term.is_file():
            stat = long_term.stat()
            found[str(long_term)] = (LONG_TERM_FILE, (stat.st_mtime_ns, stat.st_size))
        for folder in (RECENT_DIR, SUMMARY_DIR):
            _scan_dir(str(self.state_dir / folder), folder, found, recursive=False)
        _scan_dir(str(self.work_dir / DOCS_DIR), DOCS_DIR, found, recursive=True)
        return found

    def _refresh(self) -> None:
        current = self._scan()
        first = self._model is None
        files = self._files
        changed = [
            path for path, (_, signature) in current.items()
            if path not in files or files[path].signature != signature
        ] + [path for path in files if path not in current]
        for path in changed:
            self._drop(path)
            if path in current:
                self._load(path, *current[path])
        if first:
            self.rebuild_count += 1
        else:
            self.update_count += len(changed)
        if first or changed:
            self._assemble()

    def _load(self, path: str, source: str, signature: tuple[int, int]) -> None:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            period = file_period(Path(path))
        except FileNotFoundError:
            return  # removed since the scan; the next query sees it gone
        passages = split_passages(text)
        counts = [Counter(tokenize(p.removesuffix(TRUNCATION_MARK))) for p in passages]
        entry = _File(signature, source, period, passages, counts, [sum(c.values()) for c in counts])
        self._files[path] = entry
        for number, count in enumerate(counts):
            self._doc_count.update(count.keys())
            for term in count:
                self._postings.setdefault(term, {}).setdefault(path, []).append(number)

    def _drop(self, path: str) -> None:
        entry = self._files.pop(path, None)
        if entry is None:
            return
        self._doc_count.subtract(term for count in entry.counts for term in count)
        for term in {term for count in entry.counts for term in count}:
            if self._doc_count[term] <= 0:
                del self._doc_count[term]
            holders = self._postings.get(term)
            if holders is not None:
                holders.pop(path, None)
                if not holders:
                    del self._postings[term]

    def _assemble(self) -> None:
        """Lay the cached passages out in one list and rebuild the BM25 model from counts."""
        doc_freqs: list[dict[str, int]] = []
        doc_len: list[int] = []
        self._offsets, self._owners = {}, []
        for path, entry in self._files.items():
            self._offsets[path] = len(doc_freqs)
            self._owners.extend([path] * len(entry.counts))
            doc_freqs.extend(entry.counts)
            doc_len.extend(entry.lengths)
        self._model = PositiveBM25.from_counts(doc_freqs, doc_len, self._doc_count)

    # --- scoring ------------------------------------------------------------------------

    def _bm25_scores(self, terms: list[str], span: tuple, limit: int) -> list[tuple]:
        """(score, source, passage) of the best passages containing a term, all scores > 0."""
        if not terms or self._model is None or not self._model.corpus_size:
            return []
        ids: set[int] = set()
        for term in terms:
            for path, numbers in self._postings.get(term, {}).items():
                if span == (None, None) or in_span(self._files[path].period, span):
                    offset = self._offsets[path]
                    ids.update(offset + number for number in numbers)
        if not ids:
            return []
        ordered = np.fromiter(sorted(ids), dtype=int, count=len(ids))
        scores = np.asarray(self._model.get_batch_scores(terms, ordered.tolist()))
        keep = np.flatnonzero(scores > 0)
        if len(keep) > limit:  # only the best few (and ties with the last) become hits
            floor = np.partition(scores[keep], -limit)[-limit]
            keep = keep[scores[keep] >= floor]
        results = []
        for passage_id, score in zip(ordered[keep].tolist(), scores[keep].tolist(), strict=True):
            path = self._owners[passage_id]
            entry = self._files[path]
            results.append((score, entry.source, entry.passages[passage_id - self._offsets[path]]))
        return results


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

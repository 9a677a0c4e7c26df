"""BM25 search over memory files and project docs, kept in memory and updated file by file."""

from __future__ import annotations

import heapq
import logging
import os
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from mimikit.memory.bm25 import Bm25Index
from mimikit.memory.cache import CACHE_FILE, CachedFile, TermCache
from mimikit.memory.catalog import Catalog, IndexedFile
from mimikit.memory.corpus import Corpus, Signature, signature_of
from mimikit.memory.fallback import substring_search
from mimikit.memory.files import as_utc, mtime_period, name_period
from mimikit.memory.passages import PASSAGE_MAX_CHARS, TRUNCATION_MARK, split_passages, truncate
from mimikit.memory.tokenize import tokenize
from mimikit.memory.watch import ChangeWatcher, open_watcher
from mimikit.models import Model

logger = logging.getLogger("mimikit.memory")

# Change notifications can miss writes made elsewhere (network file systems): re-check
# every file this often anyway. One re-check of 10,000 files costs tens of milliseconds.
FULL_SCAN_INTERVAL_SECONDS = 120.0

_ToLoad = tuple[str, str, Signature, CachedFile | None]  # path, source, signature, cached


class MemoryHit(Model):
    """One search result: where it came from, the passage (<= 300 chars) and its score."""

    source: str
    content: str
    score: float


class MemoryIndex:
    """Search memory (``memory.md``, ``memory/``, ``memory/summary/``) and ``WORK_DIR/docs``.

    Built once (from the term cache for the files it holds), then kept current file by file:
    the kernel says which files changed (inotify) and only those are read again; without
    change notifications every search re-checks each file's mtime and size.

    Args:
        state_dir: The Mimikit state dir.
        work_dir: The work dir whose ``docs/**/*.md`` are searched too.
    """

    def __init__(self, state_dir: Path, work_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.work_dir = Path(work_dir)
        self.rebuild_count = 0  # full builds: the first search, and after a failure
        self.update_count = 0  # files read again or dropped since
        self._corpus = Corpus(self.state_dir, self.work_dir)
        self._cache = TermCache(self.state_dir / CACHE_FILE)
        self._lock = threading.Lock()
        self._watcher: ChangeWatcher | None = None
        self._reset()

    def warm(self) -> None:
        """Build the index now, or bring it up to date: cheap once built. jieba's word list
        is loaded only when a file not in the term cache has Chinese in it."""
        with self._lock:
            try:
                self._refresh()
            except Exception as error:  # the first search falls back and logs, as any would
                logger.warning("memory search: could not build the index (%s: %s)",
                               type(error).__name__, error)
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
                corpus = self._corpus
                scored = substring_search(query, corpus.scan(), corpus.roots(), span, error)
        best = heapq.nsmallest(limit, scored, key=lambda item: (-item[0], item[1]))
        return [
            MemoryHit(source=source, content=truncate(text, PASSAGE_MAX_CHARS), score=score)
            for score, source, text in best
        ]

    def close(self) -> None:
        """Stop watching the files; a later search builds the index again."""
        with self._lock:
            self._reset()

    # --- keeping the index current ------------------------------------------------------

    def _reset(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher = None
        self._catalog = Catalog()
        self._bm25 = Bm25Index()
        self._built = False
        self._scanned_at = 0.0  # time.monotonic() of the last full scan
        self._uncached = 0  # files cut since the term cache was last written

    def _refresh(self) -> None:
        if not self._built:
            self._open_watcher()
            self._full_scan(self._cache.load())
            self._built = True
            self.rebuild_count += 1
            return
        changed: set[str] | None = None
        if self._watcher is not None and self._watcher.pid != os.getpid():
            self._open_watcher()  # forked: the parent reads that event queue, not us
        elif self._watcher is not None:
            changed = self._watcher.changes()
        if changed is None or time.monotonic() - self._scanned_at > FULL_SCAN_INTERVAL_SECONDS:
            self.update_count += self._full_scan({})
        else:
            self.update_count += self._reload(changed)

    def _open_watcher(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher = open_watcher(self._corpus.folders())

    def _full_scan(self, cached: dict[str, CachedFile]) -> int:
        """Compare every file's signature with the index's; returns how many changed."""
        if self._watcher is not None:
            self._watcher.watch()  # before listing, so that no change slips in between
        current = self._corpus.scan()
        self._scanned_at = time.monotonic()
        files = self._catalog.files
        changed = [
            path for path, (_, signature) in current.items()
            if path not in files or files[path].signature != signature
        ] + [path for path in files if path not in current]
        self._replace(changed, [
            (path, *current[path], cached.get(path)) for path in changed if path in current
        ])
        if self._uncached:
            self._save_cache()
        return len(changed)

    def _reload(self, paths: set[str]) -> int:
        """Read ``paths`` again (or drop them if gone); returns how many were indexed ones."""
        dropped: list[str] = []
        loaded: list[_ToLoad] = []
        for path in paths:
            source = self._corpus.source_of(path)
            signature = signature_of(path) if source is not None else None
            if source is None or (signature is None and path not in self._catalog.files):
                continue  # not searched, or created and deleted in between
            dropped.append(path)
            if signature is not None:
                loaded.append((path, source, signature, None))
        self._replace(dropped, loaded)
        return len(dropped)

    def _replace(self, dropped: list[str], loaded: list[_ToLoad]) -> None:
        """Take the files ``dropped`` out of the index, then read and add ``loaded``."""
        for path in dropped:
            removed = self._catalog.remove(path)
            if removed is not None:
                self._bm25.remove(removed[1], removed[0].terms)
        ids: list[int] = []
        terms: list[str] = []
        for path, source, signature, cached in loaded:
            entry = self._read(source, path, signature, cached)
            if entry is not None:
                ids += self._catalog.add(path, entry)
                terms += entry.terms
        self._bm25.add(ids, terms)

    def _read(self, source: str, path: str, signature: Signature,
              cached: CachedFile | None) -> IndexedFile | None:
        """What the index holds of a file: from the cache if it has this version, else read."""
        if cached is not None and cached[0] == signature:
            _, passages, terms = cached
        else:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                return None  # removed since the scan; the next search sees it gone
            passages = split_passages(text)
            terms = [" ".join(tokenize(p.removesuffix(TRUNCATION_MARK))) for p in passages]
            self._uncached += 1
        period = name_period(os.path.basename(path)) or mtime_period(signature[0])
        return IndexedFile(signature, source, period, passages, terms)

    def _save_cache(self) -> None:
        self._cache.save({
            path: (entry.signature, entry.passages, entry.terms)
            for path, entry in self._catalog.files.items()
        })
        self._uncached = 0

    # --- scoring ------------------------------------------------------------------------

    def _bm25_scores(self, terms: list[str], span: tuple, limit: int) -> list[tuple]:
        """(score, source, passage) of the best passages containing a term, all scores > 0."""
        if not terms or not self._bm25.size:
            return []
        ids, scores = self._bm25.scores(terms)
        if span != (None, None):
            keep = self._catalog.within(ids, *span)
            ids, scores = ids[keep], scores[keep]
        if len(ids) > limit:  # only the best few (and ties with the last) become hits
            floor = np.partition(scores, -limit)[-limit]
            keep = scores >= floor
            ids, scores = ids[keep], scores[keep]
        return [
            (score, *self._catalog.passage(passage_id))
            for passage_id, score in zip(ids.tolist(), scores.tolist(), strict=True)
        ]

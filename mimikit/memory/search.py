"""BM25 search over memory files and project docs, kept warm and updated file by file."""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rank_bm25 import BM25Okapi

from mimikit.memory.files import LONG_TERM_FILE, RECENT_DIR, SUMMARY_DIR, as_utc, file_period
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
RG_TIMEOUT_SECONDS = 10
_RAW_TERMS = re.compile("[a-z0-9_]{2,}|[\u4e00-\u9fff]{2,}", re.IGNORECASE)


class MemoryHit(Model):
    """One search result: where it came from, the passage (<= 300 chars) and its score."""

    source: str
    content: str
    score: float


class _PositiveBM25(BM25Okapi):
    """BM25Okapi with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), which is always > 0.

    Okapi's own idf is 0 or negative for a term in half the passages or more (on a
    two-passage corpus a real match would score 0), so a match could rank below nothing.
    Built from cached term counts so that changing one file does not recount the corpus.
    """

    @classmethod
    def from_counts(
        cls, doc_freqs: list[dict[str, int]], doc_len: list[int], nd: dict[str, int]
    ) -> _PositiveBM25:
        model = cls.__new__(cls)
        model.k1, model.b, model.epsilon, model.tokenizer = 1.5, 0.75, 0.25, None
        model.doc_freqs, model.doc_len = doc_freqs, doc_len
        model.corpus_size = len(doc_freqs)
        model.avgdl = sum(doc_len) / max(len(doc_len), 1) or 1.0
        model.idf = {}
        model._calc_idf(nd)
        return model

    def _calc_idf(self, nd: dict[str, int]) -> None:
        n = self.corpus_size
        self.idf = {word: math.log(1 + (n - f + 0.5) / (f + 0.5)) for word, f in nd.items()}


@dataclass
class _File:
    signature: tuple[int, int]  # (mtime_ns, size): a change in either means re-read
    source: str
    period: tuple[datetime, datetime]
    passages: list[str]
    counts: list[dict[str, int]]
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
        self._files: dict[Path, _File] = {}
        self._doc_count: Counter[str] = Counter()  # term -> passages containing it
        self._postings: dict[str, set[Path]] = {}  # term -> files containing it
        self._offsets: dict[Path, int] = {}
        self._model: _PositiveBM25 | None = None

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
                scored = self._bm25_scores(terms, span)
            except Exception as error:  # search must degrade, never fail the agent's run
                self._reset()  # a half-applied update must not survive: rebuild next time
                scored = self._fallback_scores(query, span, error)
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [
            MemoryHit(source=source, content=truncate(text, PASSAGE_MAX_CHARS), score=score)
            for score, source, text in scored[:limit]
        ]

    # --- keeping the index current ------------------------------------------------------

    def _reset(self) -> None:
        self._files, self._doc_count, self._postings = {}, Counter(), {}
        self._offsets, self._model = {}, None

    def _scan(self) -> dict[Path, tuple[str, tuple[int, int]]]:
        """Every corpus file with its source name and (mtime_ns, size) signature."""
        found: dict[Path, tuple[str, tuple[int, int]]] = {}
        long_term = self.state_dir / LONG_TERM_FILE
        if long_term.is_file():
            stat = long_term.stat()
            found[long_term] = (LONG_TERM_FILE, (stat.st_mtime_ns, stat.st_size))
        for folder in (RECENT_DIR, SUMMARY_DIR):
            self._scan_dir(self.state_dir / folder, folder, found, recursive=False)
        self._scan_dir(self.work_dir / DOCS_DIR, DOCS_DIR, found, recursive=True)
        return found

    def _scan_dir(self, folder: Path, prefix: str, found: dict, recursive: bool) -> None:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if entry.is_dir() and recursive:
                self._scan_dir(Path(entry.path), f"{prefix}/{entry.name}", found, True)
            elif entry.name.endswith(".md") and entry.is_file():
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue  # removed between listing and stat
                found[Path(entry.path)] = (f"{prefix}/{entry.name}", (stat.st_mtime_ns, stat.st_size))

    def _refresh(self) -> None:
        current = self._scan()
        first = self._model is None
        changed = [
            path for path in self._files.keys() | current.keys()
            if path not in current or path not in self._files
            or self._files[path].signature != current[path][1]
        ]
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

    def _load(self, path: Path, source: str, signature: tuple[int, int]) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            period = file_period(path)
        except FileNotFoundError:
            return  # removed since the scan; the next query sees it gone
        passages = split_passages(text)
        counts = [Counter(tokenize(p.removesuffix(TRUNCATION_MARK))) for p in passages]
        entry = _File(signature, source, period, passages, counts, [sum(c.values()) for c in counts])
        self._files[path] = entry
        for count in counts:
            self._doc_count.update(count.keys())
            for term in count:
                self._postings.setdefault(term, set()).add(path)

    def _drop(self, path: Path) -> None:
        entry = self._files.pop(path, None)
        if entry is None:
            return
        self._doc_count.subtract(term for count in entry.counts for term in count)
        for term in {term for count in entry.counts for term in count}:
            if self._doc_count[term] <= 0:
                del self._doc_count[term]
            holders = self._postings.get(term)
            if holders is not None:
                holders.discard(path)
                if not holders:
                    del self._postings[term]

    def _assemble(self) -> None:
        """Lay the cached passages out in one list and rebuild the BM25 model from counts."""
        doc_freqs: list[dict[str, int]] = []
        doc_len: list[int] = []
        self._offsets = {}
        for path, entry in self._files.items():
            self._offsets[path] = len(doc_freqs)
            doc_freqs.extend(entry.counts)
            doc_len.extend(entry.lengths)
        self._model = _PositiveBM25.from_counts(doc_freqs, doc_len, self._doc_count)

    # --- scoring ------------------------------------------------------------------------

    def _bm25_scores(self, terms: list[str], span: tuple) -> list[tuple[float, str, str]]:
        if not terms or self._model is None or not self._model.corpus_size:
            return []
        files = set().union(*(self._postings.get(term, set()) for term in terms))
        places = [
            (path, index)
            for path in files
            if _in_span(self._files[path].period, span)
            for index in range(len(self._files[path].passages))
        ]
        ids = [self._offsets[path] + index for path, index in places]
        scores = self._model.get_batch_scores(terms, ids) if ids else []
        return [
            (float(score), self._files[path].source, self._files[path].passages[index])
            for (path, index), score in zip(places, scores, strict=True)
            if score > 0
        ]

    def _fallback_scores(self, query: str, span: tuple, error: Exception) -> list:
        """Substring search when BM25 fails: ``rg`` picks the files if it is installed."""
        rg = shutil.which("rg")
        logger.warning(
            "memory search: BM25 failed (%s: %s); falling back to %s",
            type(error).__name__, error, "rg" if rg else "a plain substring scan",
        )
        terms = [term.lower() for term in _RAW_TERMS.findall(query)] or [query.strip().lower()]
        files = self._scan()
        roots = [self.state_dir / LONG_TERM_FILE, self.state_dir / RECENT_DIR]
        roots.append(self.work_dir / DOCS_DIR)
        paths = _rg_files(rg, terms, roots, files) if rg else list(files)
        scored = []
        for path in paths:
            try:
                if not _in_span(file_period(path), span):
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                continue
            for passage in split_passages(text):
                lowered = passage.lower()
                hits = sum(1 for term in terms if term in lowered)
                if hits:
                    scored.append((float(hits), files[path][0], passage))
        return scored


def _in_span(period: tuple[datetime, datetime], span: tuple) -> bool:
    start, end = period
    after, before = span
    if after is not None and end <= after and start < after:
        return False
    return before is None or start <= before


def _rg_files(rg: str, terms: list[str], roots: list[Path], corpus: dict) -> list[Path]:
    """The corpus files under ``roots`` that contain any term (case-insensitive), by ripgrep."""
    existing = [str(root) for root in roots if root.exists()]
    if not existing:
        return []
    args = [rg, "--files-with-matches", "--ignore-case", "--fixed-strings", "--glob", "*.md"]
    for term in terms:
        args += ["-e", term]
    done = subprocess.run(
        [*args, "--", *existing],
        capture_output=True, text=True, timeout=RG_TIMEOUT_SECONDS, check=False,
    )
    return [Path(line) for line in done.stdout.splitlines() if Path(line) in corpus]

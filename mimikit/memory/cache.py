"""Passages and terms of indexed files, kept on disk so that a new process skips jieba.

Cutting Chinese with jieba is most of the cost of building an index; every process that
searches (web, workers) builds its own. The cache holds, per file and (mtime, size), what
reading that file gave, and is trusted only when written by the same tokenizer and passage
code (a hash of their source and jieba's version) -- otherwise it is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from importlib.metadata import version
from pathlib import Path

from mimikit.memory.corpus import Signature
from mimikit.memory.passages import split_passages
from mimikit.memory.tokenize import tokenize

logger = logging.getLogger("mimikit.memory")

CACHE_FILE = "cache/memory-index.json"
_FORMAT = 1

CachedFile = tuple[Signature, list[str], list[str]]  # signature, passages, terms per passage


def fingerprint() -> str:
    """What the cached terms depend on: this format, jieba's version, the cutting code."""
    digest = hashlib.sha256(f"{_FORMAT} {version('jieba')}".encode())
    for function in (tokenize, split_passages):
        digest.update(Path(function.__code__.co_filename).read_bytes())
    return digest.hexdigest()


class TermCache:
    """One JSON file of path -> [mtime_ns, size, passages, terms per passage].

    Args:
        path: The cache file; its folder is created when saving, but only inside an
            existing state dir.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fingerprint = fingerprint()

    def load(self) -> dict[str, CachedFile]:
        """The cached files; {} when there is no cache or it was made by other code."""
        try:
            with self.path.open(encoding="utf-8") as handle:
                saved = json.load(handle)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            logger.warning("memory search: ignoring unreadable cache %s (%s)", self.path, error)
            return {}
        if not isinstance(saved, dict) or saved.get("fingerprint") != self._fingerprint:
            return {}
        return {
            path: ((mtime_ns, size), texts, terms)
            for path, (mtime_ns, size, texts, terms) in saved["files"].items()
        }

    def save(self, files: dict[str, CachedFile]) -> None:
        """Replace the cache with ``files`` in one step (readers see the old or the new)."""
        state_dir = self.path.parent.parent
        if not state_dir.is_dir():
            return  # nothing is stored yet; do not create the state dir as a side effect
        payload = {
            "fingerprint": self._fingerprint,
            "files": {
                path: [signature[0], signature[1], texts, terms]
                for path, (signature, texts, terms) in files.items()
            },
        }
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        try:
            self.path.parent.mkdir(exist_ok=True)
            # dumps, not dump: one call into the C encoder instead of thousands of chunks.
            text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self.path)
        except OSError as error:
            logger.warning("memory search: could not write cache %s (%s)", self.path, error)
            partial.unlink(missing_ok=True)

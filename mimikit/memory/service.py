"""One memory index per process, shared by the API, the tools and the Teller injection."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from mimikit.config import Settings
from mimikit.memory.search import MemoryIndex

_lock = threading.Lock()
_indexes: dict[tuple[Path, Path], MemoryIndex] = {}


def index_for(settings: Settings) -> MemoryIndex:
    key = (Path(settings.state_dir).resolve(), Path(settings.work_dir).resolve())
    with _lock:
        if key not in _indexes:
            _indexes[key] = MemoryIndex(key[0], key[1])
        return _indexes[key]


def search_memory(settings: Settings, query: str, after: datetime | None = None,
                  before: datetime | None = None, limit: int = 5) -> list[dict[str, Any]]:
    hits = index_for(settings).search(query, after=after, before=before, limit=limit)
    return [hit.model_dump(mode="json") for hit in hits]

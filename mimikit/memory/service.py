"""One memory index per process, shared by the API, the tools and the Teller injection.

The index (numpy, BM25, and jieba for Chinese) is imported when a process first needs one, so
the processes that never search memory (the task worker's Worker runs, beat) do not carry it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimikit.config import Settings

if TYPE_CHECKING:
    from mimikit.memory.search import MemoryIndex

# A process serves one state dir; a few more are kept for processes (tests) that switch.
# Each index holds a change-notification handle, and the kernel allows few per user.
MAX_INDEXES_PER_PROCESS = 4

_lock = threading.Lock()
_indexes: OrderedDict[tuple[Path, Path], MemoryIndex] = OrderedDict()


def index_for(settings: Settings) -> MemoryIndex:
    """The process's index over ``settings``' state dir and work dir, created on first use."""
    from mimikit.memory.search import MemoryIndex

    key = (Path(settings.state_dir).resolve(), Path(settings.work_dir).resolve())
    with _lock:
        if key not in _indexes:
            _indexes[key] = MemoryIndex(key[0], key[1])
            while len(_indexes) > MAX_INDEXES_PER_PROCESS:
                _indexes.popitem(last=False)[1].close()  # the least recently used
        _indexes.move_to_end(key)
        return _indexes[key]


def warm(settings: Settings) -> MemoryIndex:
    """Build the process's index ahead of the first search (call it when a process starts).

    Cheap when the index is already built: it only takes in the files changed since.
    Returns the index.
    """
    index = index_for(settings)
    index.warm()
    return index


def search_memory(settings: Settings, query: str, after: datetime | None = None,
                  before: datetime | None = None, limit: int = 5) -> list[dict[str, Any]]:
    """Search the process's index; hits as JSON-ready dicts (source, content, score)."""
    hits = index_for(settings).search(query, after=after, before=before, limit=limit)
    return [hit.model_dump(mode="json") for hit in hits]

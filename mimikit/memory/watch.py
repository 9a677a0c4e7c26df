"""Which files changed in a few folders, told by the kernel (Linux inotify), not by polling.

A write, rename or delete by any process queues an event before the system call returns,
so a search that reads the queue sees every change made before it started, at the cost
of one non-blocking read instead of a ``stat`` per file.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

try:
    from inotify_simple import INotify
except ImportError:  # not installed off Linux
    INotify = None

logger = logging.getLogger("mimikit.memory")

# inotify(7) event bits
_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ONLYDIR, _ISDIR = 0x4000, 0x8000, 0x1000000, 0x40000000
_WATCH_MASK = (
    _MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
    | _DELETE_SELF | _MOVE_SELF | _ONLYDIR
)
_ENTRY_CHANGED = _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
_FOLDER_GONE = _DELETE_SELF | _MOVE_SELF | _IGNORED


class ChangeWatcher:
    """The paths changed in a set of folders since the last look.

    Args:
        inotify: An open ``inotify_simple.INotify`` (non-blocking).
        folders: (folder, with sub-folders) pairs; folders that do not exist yet are
            watched once they do.
    """

    def __init__(self, inotify: Any, folders: list[tuple[Path, bool]]) -> None:
        self._inotify = inotify
        self._folders = [(str(folder), recursive) for folder, recursive in folders]
        self._watches: dict[int, tuple[str, bool]] = {}  # watch descriptor -> folder
        self._watched: set[str] = set()
        self._failed = False
        self.pid = os.getpid()  # a forked child must not read its parent's queue

    def watch(self) -> None:
        """Watch every folder that exists now; call it before listing them for a full scan,
        so that nothing changes unseen between the listing and the first event."""
        for folder, recursive in self._folders:
            self._add(folder, recursive)

    def changes(self) -> set[str] | None:
        """Paths written, created, renamed or deleted since the last call.

        Returns:
            The paths, or None when only a full scan can tell: the event queue overflowed,
            a watched folder appeared, moved or was deleted, a sub-folder of a recursive
            folder came or went, or a folder could not be watched.
        """
        changed: set[str] = set()
        rescan = self._failed
        for event in self._inotify.read(timeout=0):
            rescan |= self._take(event, changed)
        if rescan or any(
            folder not in self._watched and os.path.isdir(folder) for folder, _ in self._folders
        ):
            return None
        return changed

    def close(self) -> None:
        """Stop watching (the kernel drops every watch with the descriptor)."""
        self._inotify.close()

    def _take(self, event: Any, changed: set[str]) -> bool:
        """Add the path of ``event`` to ``changed``; True if it calls for a full scan."""
        if event.mask & _Q_OVERFLOW:
            return True
        watched = self._watches.get(event.wd)
        if watched is None:
            return False  # a late event of a watch already dropped
        folder, recursive = watched
        if event.mask & _FOLDER_GONE:
            self._forget(event.wd, folder, still_watched=not event.mask & _IGNORED)
            return True
        if event.mask & _ISDIR:
            return recursive and bool(event.mask & _ENTRY_CHANGED)
        changed.add(os.path.join(folder, event.name))
        return False

    def _add(self, folder: str, recursive: bool) -> None:
        if folder not in self._watched:
            try:
                descriptor = self._inotify.add_watch(folder, _WATCH_MASK)
            except (FileNotFoundError, NotADirectoryError):
                return
            except OSError as error:  # e.g. fs.inotify.max_user_watches reached
                if not self._failed:
                    logger.warning("memory search: cannot watch %s (%s); every search will "
                                   "re-check every file", folder, error)
                self._failed = True
                return
            self._watches[descriptor] = (folder, recursive)
            self._watched.add(folder)
        if recursive:
            for entry in _subfolders(folder):
                self._add(entry, True)

    def _forget(self, descriptor: int, folder: str, still_watched: bool) -> None:
        """Drop a watch whose folder moved (the watch would follow it) or is gone."""
        self._watches.pop(descriptor, None)
        self._watched.discard(folder)
        if still_watched:
            try:
                self._inotify.rm_watch(descriptor)
            except OSError:
                pass  # the kernel dropped it already (the folder was deleted meanwhile)


def open_watcher(folders: list[tuple[Path, bool]]) -> ChangeWatcher | None:
    """A watcher over ``folders``, or None where inotify is missing (not Linux) or exhausted."""
    try:
        if INotify is None:
            raise ImportError("inotify_simple is not installed")
        return ChangeWatcher(INotify(nonblocking=True), folders)
    except (ImportError, OSError, AttributeError) as error:
        logger.warning("memory search: no file change notifications (%s: %s); every search "
                       "will re-check every file", type(error).__name__, error)
        return None


def _subfolders(folder: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(folder) if entry.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return []

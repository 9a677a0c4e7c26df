"""Host slots: at most ``MIMIKIT_SHELL_CONCURRENCY`` shell commands and codex runs at once on
one host, however many runs and worker processes it has.

Runs mostly wait for the LLM, so one worker holds many of them; the commands they start use the
CPU, so those take turns. A slot is a lock file under ``STATE_DIR/slots/HOSTNAME/`` held with
``flock``: shared by every process of the host on that state dir, and given back by the kernel
when its holder dies (``kill -9`` included). Within a process the waiters queue on a semaphore
first, so only as many poll the files as there are slots. A wait ends early when the run stops
(a cancel, its deadline): ``stop`` is polled.
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from mimikit.exceptions import WaitStopped

if TYPE_CHECKING:
    from mimikit.config import Settings

POLL_SECONDS = 0.05


class HostSlots:
    """``size`` slots shared by the processes of this host that use ``directory``."""

    def __init__(self, directory: Path, size: int) -> None:
        self.directory = directory
        self.size = size
        self._local = threading.BoundedSemaphore(size)
        self._next = 0

    @contextmanager
    def hold(self, stop: Callable[[], bool]) -> Iterator[float]:
        """Hold a slot for the block; yields the seconds spent waiting for it.

        Raises:
            WaitStopped: ``stop()`` turned true before a slot was free.
        """
        began = time.monotonic()
        while not self._local.acquire(timeout=POLL_SECONDS):
            if stop():
                raise WaitStopped("stopped while waiting for a free shell slot")
        try:
            fd = self._lock_file(stop)
            try:
                yield time.monotonic() - began
            finally:
                os.close(fd)  # gives the lock back
        finally:
            self._local.release()

    def _lock_file(self, stop: Callable[[], bool]) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            fd = self._try_any()
            if fd is not None:
                return fd
            if stop():
                raise WaitStopped("stopped while waiting for a free shell slot")
            time.sleep(POLL_SECONDS)

    def _try_any(self) -> int | None:
        """A descriptor holding one free slot's lock, or None when every slot is taken (by
        this or another process). Each try opens the file anew: ``flock`` is per open file, so
        two runs of one process exclude each other too."""
        start, self._next = self._next, (self._next + 1) % self.size
        for offset in range(self.size):
            path = self.directory / f"{(start + offset) % self.size}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None


_lock = threading.Lock()
_slots: dict[tuple[Path, int], HostSlots] = {}


def host_slots(directory: Path, size: int) -> HostSlots:
    """The process's slots over ``directory`` (one semaphore per directory and size)."""
    key = (directory.resolve(), size)
    with _lock:
        if key not in _slots:
            _slots[key] = HostSlots(key[0], size)
        return _slots[key]


def slots_for(settings: Settings) -> HostSlots:
    """The slots of this host under the settings' state dir."""
    directory = Path(settings.state_dir) / "slots" / socket.gethostname()
    return host_slots(directory, settings.shell_concurrency)

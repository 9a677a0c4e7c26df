"""Every Celery signal Mimikit listens to, connected in one place (``connect``).

- ``worker_ready`` / ``worker_shutdown``: a worker registers itself while it lives
  (``delivery.workers``), which ``mimikit status`` reads.
- ``worker_process_init``: pool processes become non-dumpable, so a Worker's shell command
  (same user) cannot read their environment, and with it the runtime's secrets, from
  ``/proc/<pid>/environ``.
- ``beat_init``: wait as a standby until this beat holds the lock (instead of RedBeat's own
  wait, which sits out the lock timeout even when the holder is dead), note the holder, run
  the start-up recovery.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

from celery.signals import beat_init, worker_process_init, worker_ready, worker_shutdown
from redbeat.schedulers import acquire_distributed_beat_lock

from mimikit.delivery.workers import Registration, worker_info
from mimikit.scheduling.beat import on_beat_init
from mimikit.store.runtime import get_runtime

log = logging.getLogger("mimikit.signals")
PR_SET_DUMPABLE = 4
_registrations: list[Registration] = []


def connect() -> None:
    """Connect the handlers (idempotent: each is connected once per process)."""
    worker_ready.connect(_on_worker_ready, weak=False, dispatch_uid="mimikit.worker_ready")
    worker_shutdown.connect(_on_worker_shutdown, weak=False,
                            dispatch_uid="mimikit.worker_shutdown")
    worker_process_init.connect(_hide_environment, weak=False,
                                dispatch_uid="mimikit.worker_process_init")
    beat_init.disconnect(acquire_distributed_beat_lock)
    beat_init.connect(on_beat_init, weak=False, dispatch_uid="mimikit.beat_init")


def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    registration = Registration(get_runtime(), worker_info(sender))
    _registrations.append(registration)
    registration.start()


def _on_worker_shutdown(**_: Any) -> None:
    while _registrations:
        _registrations.pop().stop()


def _hide_environment(**_: Any) -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError as error:  # not Linux: nothing to hide this way
        log.info("cannot make the worker process non-dumpable: %s", error)

"""Every Celery signal Mimikit listens to, connected in one place (``connect``).

- ``worker_ready`` / ``worker_shutdown``: a worker registers itself while it lives
  (``delivery.workers``), which ``mimikit status`` reads.
- ``worker_init`` / ``worker_process_init``: the worker, then each pool process (prefork), warms
  up for its first job, for the queues it consumes (see ``connect``); the worker and its pool
  processes also become non-dumpable, so a Worker's shell command (same user) cannot read their
  environment, and with it the runtime's secrets, from ``/proc/<pid>/environ`` (on the threads
  pool the worker process itself runs the tasks).
- ``beat_init``: wait as a standby until this beat holds the lock (instead of RedBeat's own
  wait, which sits out the lock timeout even when the holder is dead), note the holder, run
  the start-up recovery.
- ``setup_logging``: Mimikit's logging setup (``logs``) instead of Celery's, in workers and beat.
- ``task_prerun`` / ``task_postrun``: the log records of a task carry its ids.
Workers and beat also bring the stored data up to this version's schema when they start.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from typing import Any

from celery.signals import (
    beat_init,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)
from kombu.exceptions import OperationalError
from redbeat.schedulers import acquire_distributed_beat_lock
from redis.exceptions import RedisError

from mimikit import logs
from mimikit.delivery.workers import Registration, worker_info
from mimikit.exceptions import MimikitError
from mimikit.scheduling.beat import on_beat_init
from mimikit.store.runtime import Runtime, get_runtime
from mimikit.supervisor.upgrades import upgrade
from mimikit.workspace.sandbox import sandbox_report

log = logging.getLogger("mimikit.signals")
PR_SET_DUMPABLE = 4
_registrations: list[Registration] = []
Warmer = Callable[[Runtime, frozenset[str]], dict[str, float]]
_warmers: list[Warmer] = []
_queues: list[frozenset[str]] = [frozenset()]


def connect(warm: Warmer | None = None) -> None:
    """Connect the handlers (idempotent: each is connected once per process).

    ``warm(runtime, queues)`` readies a worker for its first job from ``queues``: called in the
    worker before its pool starts (what its processes inherit, or what its threads share) and
    in each pool process (what each needs of its own).
    """
    if warm is not None:
        _warmers[:] = [warm]
    worker_init.connect(_on_worker_init, weak=False, dispatch_uid="mimikit.worker_init")
    worker_ready.connect(_on_worker_ready, weak=False, dispatch_uid="mimikit.worker_ready")
    worker_shutdown.connect(_on_worker_shutdown, weak=False,
                            dispatch_uid="mimikit.worker_shutdown")
    worker_process_init.connect(_on_process_init, weak=False,
                                dispatch_uid="mimikit.worker_process_init")
    beat_init.disconnect(acquire_distributed_beat_lock)
    beat_init.connect(_on_beat_init, weak=False, dispatch_uid="mimikit.beat_init")
    setup_logging.connect(_setup_logging, weak=False, dispatch_uid="mimikit.setup_logging")
    task_prerun.connect(_bind_task, weak=False, dispatch_uid="mimikit.task_prerun")
    task_postrun.connect(_unbind_task, weak=False, dispatch_uid="mimikit.task_postrun")


def _setup_logging(**_: Any) -> None:
    """Celery's ``--loglevel`` is not used: ``MIMIKIT_LOG_LEVEL`` is the level."""
    logs.configure_from(get_runtime().settings)


def _bind_task(task_id: str | None = None, args: Any = None, kwargs: Any = None,
               **_: Any) -> None:
    ours = (kwargs or {}).get("task_id") or next(iter(args or ()), None)
    logs.bind(celeryId=task_id, taskId=ours if isinstance(ours, str) else None)


def _unbind_task(**_: Any) -> None:
    logs.unbind()


def _on_worker_init(sender: Any = None, **_: Any) -> None:
    try:
        _queues[0] = frozenset(sender.app.amqp.queues.consume_from)
    except AttributeError:  # not a worker as Celery builds them: warm for every queue
        _queues[0] = frozenset()
    _hide_environment()
    _warm()


def _warm(**_: Any) -> None:
    for warm in _warmers:
        try:
            log.info("warmed up for the first job: %s", warm(get_runtime(), _queues[0]))
        except (MimikitError, RedisError, OperationalError, OSError) as error:
            # the first job then pays for it
            log.warning("could not warm up: %s", error)


def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    _upgrade()
    runtime = get_runtime()
    # Each worker says which sandbox its shell commands get: hosts may differ.
    info = {**worker_info(sender), "sandbox": sandbox_report(runtime.settings)["kind"]}
    registration = Registration(runtime, info)
    _registrations.append(registration)
    registration.start()


def _on_worker_shutdown(**_: Any) -> None:
    while _registrations:
        _registrations.pop().stop()


def _on_beat_init(sender: Any = None, **kwargs: Any) -> None:
    _upgrade()
    on_beat_init(sender, **kwargs)


def _upgrade() -> None:
    try:
        upgrade(get_runtime())
    except (MimikitError, RedisError) as error:  # the process still serves; it says why
        log.error("cannot bring the stored data up to date: %s", error)


def _on_process_init(**_: Any) -> None:
    _hide_environment()
    _warm()  # a pool process: its own connections, client and index watcher


def _hide_environment() -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError as error:  # not Linux: nothing to hide this way
        log.info("cannot make the worker process non-dumpable: %s", error)

"""The Celery tasks of Mimikit; names are what Flower shows (``mimikit.*``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

from celery.signals import worker_process_init

from mimikit import cluster  # noqa: F401  (connects the worker registration signals)
from mimikit.celery_app import app
from mimikit.execution import owner_token
from mimikit.runtime import get_runtime

log = logging.getLogger("mimikit.tasks")
PR_SET_DUMPABLE = 4


@app.task(name="mimikit.teller", bind=True, ignore_result=True)
def teller(self: Any) -> str:
    """One Teller run: answers everything pending in the inbox."""
    from mimikit.agents.teller import run_teller

    return run_teller(get_runtime(), owner_token(self.request.id))


@app.task(name="mimikit.planner", bind=True)
def planner(self: Any, task_id: str) -> str:
    """One Planner task: plans a request into Worker tasks and triggers."""
    from mimikit.agents.planner import run_planner

    return run_planner(get_runtime(), task_id, self.request.id)


@app.task(name="mimikit.worker", bind=True)
def worker(self: Any, task_id: str) -> str:
    """One Worker task (``llm`` or ``codex`` backend)."""
    from mimikit.agents.worker import run_worker

    return run_worker(get_runtime(), task_id, self.request.id)


@app.task(name="mimikit.supervisor.tick", ignore_result=True, acks_late=False)
def supervisor_tick() -> dict[str, Any]:
    """The periodic supervisor pass (every ``TICK_SECONDS``)."""
    from mimikit.supervisor import tick

    return tick(get_runtime())


@app.task(name="mimikit.memory.archive", ignore_result=True)
def memory_archive() -> dict[str, Any]:
    """Archive and flush the conversation into memory (the 6-hourly entry)."""
    from mimikit.memory_jobs import maybe_archive

    return maybe_archive(get_runtime(), force=True)


@worker_process_init.connect
def _hide_environment(**_: Any) -> None:
    """Make pool processes non-dumpable, so a Worker's shell command (same user) cannot read
    their environment, and with it the runtime's secrets, from /proc/<pid>/environ."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError as error:  # not Linux: nothing to hide this way
        log.info("cannot make the worker process non-dumpable: %s", error)

"""Every Celery task of Mimikit; the names are what Flower shows (``mimikit.*``).

Each body is an edge: it gets the process's runtime and hands it to the code that does the
work. Celery imports this module in workers and beat (``include`` in ``celeryconfig.py``), which
is also where the signal handlers are connected, once (``signals.connect``). Each body imports
the code it runs when it first runs (or when its worker warms up for it), so a process carries
only what it serves: beat none of it, the task worker no supervisor and no memory index.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mimikit import signals
from mimikit.celery_app import app
from mimikit.store.identity import owner_token
from mimikit.store.runtime import Runtime, get_runtime


@app.task(name="mimikit.teller", bind=True, ignore_result=True)
def teller(self: Any) -> str:
    """One Teller run: answers everything pending in the inbox."""
    from mimikit.agents.teller import run_teller

    return run_teller(get_runtime(), owner_token(self.request.id))


@app.task(name="mimikit.planner", bind=True, ignore_result=True)
def planner(self: Any, task_id: str) -> str:
    """One Planner task: plans a request into Worker tasks and triggers."""
    from mimikit.agents.planner import run_planner

    return run_planner(get_runtime(), task_id, self.request.id)


@app.task(name="mimikit.worker", bind=True, ignore_result=True)
def worker(self: Any, task_id: str) -> str:
    """One Worker task (``llm`` or ``codex`` backend)."""
    from mimikit.agents.worker import run_worker

    return run_worker(get_runtime(), task_id, self.request.id)


@app.task(name="mimikit.llm_eval_batch", bind=True, ignore_result=True)
def llm_eval_batch(self: Any, task_id: str | None = None) -> dict[str, Any]:
    """Evaluate every pending ``llm_eval`` condition in one run (or re-run batch ``task_id``)."""
    from mimikit.agents.llm_eval import run_batch

    return run_batch(get_runtime(), self.request.id, task_id)


@app.task(name="mimikit.supervisor.tick", ignore_result=True, acks_late=False)
def supervisor_tick() -> dict[str, Any]:
    """The periodic supervisor pass (every ``TICK_SECONDS``)."""
    from mimikit.supervisor.tick import tick

    return tick(get_runtime())


@app.task(name="mimikit.supervisor.recover", ignore_result=True)
def recover() -> dict[str, Any]:
    """Start-up recovery: re-dispatch queued work, restore trigger entries, wake the Teller."""
    from mimikit.supervisor.recovery import recover_on_startup

    return recover_on_startup(get_runtime())


@app.task(name="mimikit.triggers.fire", acks_late=True, ignore_result=True)
def fire(trigger_id: str, kind: str | None = None, slot: str | None = None,
         sentAt: str | None = None, **entry: Any) -> str:  # noqa: N803 - the message field
    """Fire one slot of a recurring or scheduled trigger (sent by its RedBeat entry, whose other
    fields, e.g. a cron's expression, are only the entry's own)."""
    from mimikit.scheduling.timed import fire_timed
    from mimikit.scheduling.triggers import guarded

    runtime = get_runtime()
    return guarded(runtime, trigger_id, f"firing slot {slot}",
                   lambda: fire_timed(runtime, trigger_id, _time(slot), _time(sentAt)), "failed")


@app.task(name="mimikit.memory.archive", ignore_result=True)
def memory_archive() -> dict[str, Any]:
    """Archive and flush the conversation into memory (the 6-hourly entry)."""
    from mimikit.supervisor.archival import maybe_archive

    return maybe_archive(get_runtime(), force=True)


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def warm(runtime: Runtime, queues: frozenset[str]) -> dict[str, float]:
    """Ready a worker for its first job from ``queues`` (``agents.common.warm``); the agents
    worker also imports the supervisor and the Teller's pass."""
    from mimikit.agents.common import warm as warm_agents

    if not queues or "supervisor" in queues:
        from mimikit.supervisor import recovery, tick  # noqa: F401 - imported ahead of a tick
    if not queues or "teller" in queues:
        from mimikit.agents import teller  # noqa: F401 - imported ahead of the first message
    return warm_agents(runtime, queues)


signals.connect(warm=warm)

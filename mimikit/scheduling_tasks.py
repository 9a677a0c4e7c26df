"""Celery tasks of the scheduler: trigger firing, the llm_eval batch, start-up recovery."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mimikit.celery_app import app
from mimikit.runtime import get_runtime


@app.task(name="mimikit.triggers.fire", acks_late=True, ignore_result=True)
def fire(trigger_id: str, kind: str | None = None, slot: str | None = None,
         sentAt: str | None = None) -> str:  # noqa: N803 - the message field name
    """Fire one slot of a recurring or scheduled trigger (sent by its RedBeat entry)."""
    from mimikit.triggers import fire_timed

    return fire_timed(get_runtime(), trigger_id, _time(slot), _time(sentAt))


@app.task(name="mimikit.llm_eval_batch", bind=True, ignore_result=True)
def llm_eval_batch(self: Any, task_id: str | None = None) -> dict[str, Any]:
    """Evaluate every pending ``llm_eval`` condition in one run (or re-run batch ``task_id``)."""
    from mimikit.llm_eval import run_batch

    return run_batch(get_runtime(), self.request.id, task_id)


@app.task(name="mimikit.supervisor.recover", ignore_result=True)
def recover() -> dict[str, Any]:
    """Start-up recovery: re-dispatch queued work, restore trigger entries, wake the Teller."""
    from mimikit.recovery import recover_on_startup

    return recover_on_startup(get_runtime())


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None

"""The Celery tasks of Mimikit; names are what Flower shows (``mimikit.*``)."""

from __future__ import annotations

import logging
from typing import Any

from mimikit import cluster  # noqa: F401  (connects the worker registration signals)
from mimikit.celery_app import app
from mimikit.runtime import get_runtime

log = logging.getLogger("mimikit.tasks")


@app.task(name="mimikit.supervisor.tick", ignore_result=True, acks_late=False)
def supervisor_tick() -> dict[str, Any]:
    """The periodic supervisor pass (every ``TICK_SECONDS``)."""
    from mimikit.supervisor import tick

    return tick(get_runtime())

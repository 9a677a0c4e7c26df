"""Beat on a thread of a worker (``mimikit worker --beat``, as ``mimikit up``'s agents worker
runs it): no process of its own, so an instance costs tens of MB less.

Celery's own ``--beat`` forks a process for it, which soon copies most of the worker's memory.
Beat's work is light (a tick a second, a few Redis calls), so a thread does. A beat waiting as a
standby for the lock does not hold up the worker's shutdown: the thread is a daemon and the stop
waits for it only briefly.
"""

from __future__ import annotations

from typing import Any

from celery import bootsteps
from celery.beat import EmbeddedService

STOP_WAIT_SECONDS = 5.0


class BeatThread(bootsteps.StartStopStep):
    """A worker bootstep running the app's beat scheduler on a thread."""

    label = "Beat (thread)"
    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.service: Any = None

    def start(self, parent: Any) -> None:
        self.service = EmbeddedService(parent.app, thread=True,
                                       scheduler_cls=parent.app.conf.beat_scheduler)
        self.service.start()

    def stop(self, parent: Any) -> None:
        if self.service is not None:
            self.service.service.stop(wait=False)
            self.service.join(timeout=STOP_WAIT_SECONDS)

    def terminate(self, parent: Any) -> None:
        self.stop(parent)


def run_beat_in(app: Any) -> None:
    """Make the workers of ``app`` that start from now on run beat on a thread."""
    app.steps["worker"].add(BeatThread)

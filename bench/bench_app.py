"""Celery app for benchmark workers: Mimikit's app plus a no-op task for the raw baseline."""

from mimikit.celery_app import app


@app.task(name="bench.noop")
def noop() -> None:
    """Does nothing: the raw Celery round trip."""


__all__ = ["app"]

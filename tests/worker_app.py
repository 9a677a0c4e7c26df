"""The Celery app for test workers: Mimikit's own app plus the test tasks."""

import worker_tasks  # noqa: E402,F401  (registers the test tasks)

from mimikit.celery_app import app

__all__ = ["app"]

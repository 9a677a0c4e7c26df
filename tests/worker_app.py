"""The Celery app for test workers: Mimikit's own app plus the test tasks."""

from mimikit.celery_app import app
import worker_tasks  # noqa: E402,F401  (registers the test tasks)

__all__ = ["app"]

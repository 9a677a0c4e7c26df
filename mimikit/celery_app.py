"""The Celery application: the ``celery -A mimikit.celery_app`` target.

Builds nothing at import time beyond the app. Its settings are ``mimikit.celeryconfig`` (the
repository's top-level ``celeryconfig.py``, installed inside the package), read when Celery first
needs them. The full name matters: Celery's default ``celeryconfig`` would be imported from the
current directory first, so a ``celeryconfig.py`` in the work directory could replace the broker.
"""

from __future__ import annotations

from celery import Celery

from mimikit.transport import use_for_redis_urls

# kombu's Redis transport, fixed so that a worker survives Redis going away.
use_for_redis_urls()

CELERY_SETTINGS_MODULE = "mimikit.celeryconfig"

app = Celery("mimikit")
app.config_from_object(CELERY_SETTINGS_MODULE)

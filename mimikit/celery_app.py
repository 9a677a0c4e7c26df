"""The Celery application: the ``celery -A mimikit.celery_app`` target.

Builds nothing at import time beyond the app; settings are read from ``celeryconfig`` when
Celery first needs them.
"""

from celery import Celery

from mimikit.delivery.transport import use_for_redis_urls

# kombu's Redis transport, fixed so that a worker survives Redis going away.
use_for_redis_urls()
app = Celery("mimikit")
app.config_from_object("celeryconfig")

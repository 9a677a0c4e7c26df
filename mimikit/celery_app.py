"""The Celery application: the ``celery -A mimikit.celery_app`` target.

Builds nothing at import time beyond the app; settings are read from ``celeryconfig`` when
Celery first needs them.
"""

from celery import Celery

app = Celery("mimikit")
app.config_from_object("celeryconfig")

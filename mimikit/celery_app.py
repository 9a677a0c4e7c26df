"""The Celery application: the ``celery -A mimikit.celery_app`` target.

Builds nothing at import time beyond the app. Its settings are the ``celeryconfig.py`` installed
beside the ``mimikit`` package, read from that file when Celery first needs them: Celery imports
a configuration module *by name* from the current directory first, so a ``celeryconfig.py`` in
the work directory would otherwise replace the broker.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from celery import Celery

from mimikit.transport import use_for_redis_urls

# kombu's Redis transport, fixed so that a worker survives Redis going away.
use_for_redis_urls()

CELERYCONFIG_PATH = Path(__file__).resolve().parents[1] / "celeryconfig.py"


def project_celeryconfig() -> ModuleType:
    """The project's own ``celeryconfig.py``, loaded from its path (not from ``sys.path``)."""
    spec = importlib.util.spec_from_file_location("mimikit_celeryconfig", CELERYCONFIG_PATH)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the Celery settings at {CELERYCONFIG_PATH}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_project_settings(sender: Celery, **_: Any) -> None:
    sender.config_from_object(project_celeryconfig())


app = Celery("mimikit")
app.on_configure.connect(_read_project_settings, weak=False)

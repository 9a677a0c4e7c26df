"""``mimikit web``: gunicorn (threads, for long-lived SSE) or Flask's debug server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from mimikit.config import Settings, check_web_bind
from web.events import SSE_THREADS

# Open SSE streams never finish by themselves: do not wait long for them on shutdown.
GRACEFUL_SECONDS = 2


class _Gunicorn(BaseApplication):
    def __init__(self, app: Any, options: dict[str, Any]) -> None:
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return self.application


def serve(settings: Settings, create_app: Callable[[Settings], Flask], debug: bool = False
          ) -> int:
    """Serve the app ``create_app`` builds; refuses a non-loopback bind without a token, or with
    ``debug``, before anything is built."""
    check_web_bind(settings, debug)
    app = create_app(settings)
    if debug:
        app.run(host=settings.host, port=settings.port, debug=True, threaded=True)
        return 0
    options = {
        "bind": f"{settings.host}:{settings.port}", "workers": 1, "worker_class": "gthread",
        "threads": SSE_THREADS, "timeout": 0, "graceful_timeout": GRACEFUL_SECONDS, "accesslog": None,
        "errorlog": "-", "loglevel": "warning",
    }
    _Gunicorn(app, options).run()
    return 0

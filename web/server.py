"""``mimikit web``: gunicorn (threads, for long-lived SSE) or Flask's debug server."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from mimikit.config import Settings
from mimikit.exceptions import ConfigError

SSE_THREADS = 64
# Each open ``/api/events`` stream holds a thread for as long as it lasts: keep a quarter of
# the threads free for the API and the page whatever the number of open tabs.
MAX_EVENT_STREAMS = SSE_THREADS * 3 // 4
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


def check_bind(settings: Settings, debug: bool = False) -> None:
    """Raise ``ConfigError`` for a non-loopback bind without a token, or with ``debug``."""
    if not settings.host_is_loopback and not settings.api_token:
        raise ConfigError(
            f"refusing to serve on {settings.host} without a token: set MIMIKIT_API_TOKEN "
            "(every /api call will then need 'Authorization: Bearer <token>'), or bind 127.0.0.1"
        )
    if debug and not settings.host_is_loopback:
        raise ConfigError(
            f"refusing --debug on {settings.host}: the debugger runs any Python code sent to it; "
            "use --debug only with --host 127.0.0.1, or drop --debug"
        )


def serve(settings: Settings, debug: bool = False) -> int:
    """Serve the app; refuses a non-loopback bind without a token, or with ``debug``."""
    check_bind(settings, debug)
    from web import create_app

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

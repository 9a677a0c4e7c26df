"""``mimikit web``: gunicorn (threads, for long-lived SSE) or Flask's debug server.

Both log through Mimikit's logging setup (``mimikit.logs``): gunicorn's error and access logs
go to it instead of gunicorn's own handlers, so they have the configured level and format.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from mimikit import logs
from mimikit.config import Settings, check_web_bind
from mimikit.delivery.dispatch import warm_sending
from mimikit.web.events import SSE_THREADS

# Open SSE streams never finish by themselves: do not wait long for them on shutdown.
log = logging.getLogger("mimikit.web")
GRACEFUL_SECONDS = 2
HEALTH_PATH = "/api/health"  # answered often, to health checks: logged only when it fails
SECRET_QUERY_PARAMETERS = frozenset({"token"})  # the live-update stream takes the token so


class AccessLogger(Logger):
    """gunicorn's logger, writing through the process's logging setup: the access log one line
    a request (JSON: with an ``http`` object), query secrets hidden."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in [h for h in log.handlers if getattr(h, "_gunicorn", False)]:
                log.removeHandler(handler)
            log.propagate = True

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        status = int(str(resp.status).split(None, 1)[0])
        path = environ.get("PATH_INFO", "")
        if path == HEALTH_PATH and status < 400:
            return
        query = hide_secrets(environ.get("QUERY_STRING", ""))
        http = {"method": environ.get("REQUEST_METHOD"), "path": f"{path}?{query}" if query else path,
                "status": status, "bytes": getattr(resp, "sent", None),
                "durationMs": request_time.seconds * 1000 + request_time.microseconds // 1000,
                "remote": environ.get("REMOTE_ADDR"), "userAgent": environ.get("HTTP_USER_AGENT")}
        self.access_log.info('%s "%s %s" %s %s %sms', http["remote"], http["method"],
                             http["path"], status, http["bytes"], http["durationMs"],
                             extra={"http": http})


def hide_secrets(query: str) -> str:
    """``query`` with the values of ``SECRET_QUERY_PARAMETERS`` replaced by ``***``."""
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(name in SECRET_QUERY_PARAMETERS for name, _ in pairs):
        return query
    return urlencode([(name, "***" if name in SECRET_QUERY_PARAMETERS else value)
                      for name, value in pairs], safe="*")


def warm(_worker: Any = None) -> None:
    """Ready the serving process for its first request (in gunicorn's worker, after the fork,
    before it accepts): the broker connection that user input wakes the Teller on."""
    try:
        warm_sending()
    except (RedisError, OperationalError, OSError) as error:  # the first request pays for it
        log.warning("could not warm up: %s", error)


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
    logs.configure_from(settings)
    app = create_app(settings)
    if debug:
        warm()
        app.run(host=settings.host, port=settings.port, debug=True, threaded=True)
        return 0
    options = {
        "bind": f"{settings.host}:{settings.port}", "workers": 1, "worker_class": "gthread",
        "threads": SSE_THREADS, "timeout": 0, "graceful_timeout": GRACEFUL_SECONDS,
        "accesslog": "-", "errorlog": "-", "loglevel": settings.log_level.lower(),
        "logger_class": AccessLogger, "post_worker_init": warm,
    }
    _Gunicorn(app, options).run()
    return 0
